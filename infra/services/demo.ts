import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';
import { pack } from 'tar-stream';

/**
 * The first-run demo: deploys examples/weather-agent through the public API
 * exactly as a client would (reserve, upload, finalize, create), sends one
 * message, answers the external tool call like the client's own service
 * would, and prints the transcript. Scripted model, so no API key is needed.
 */
async function tarGz(dir: string): Promise<Buffer> {
  const p = pack();
  const chunks: Buffer[] = [];
  p.on('data', (c: unknown) => void chunks.push(c as Buffer));
  const walk = (d: string): string[] => readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(d, e.name)) : [join(d, e.name)]));
  for (const file of walk(dir)) p.entry({ name: relative(dir, file).split('\\').join('/') }, readFileSync(file));
  p.finalize();
  await new Promise<void>((r) => p.on('end', () => r()));
  return gzipSync(Buffer.concat(chunks));
}

async function call<T>(base: string, key: string, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(base + path, { method, headers: { Authorization: `Bearer ${key}`, ...(body ? { 'Content-Type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path} -> ${res.status}: ${text}`);
  return (text ? JSON.parse(text) : null) as T;
}

async function deploy(base: string, key: string, dir: string): Promise<string> {
  const archive = await tarGz(dir);
  const snap = await call<{ source_snapshot_id: string; upload_url: string; upload_headers: Record<string, string> }>(base, key, 'POST', '/v1/source-snapshots', {
    format: 'tar.gz',
    sha256: createHash('sha256').update(archive).digest('hex'),
    size_bytes: archive.length,
  });
  const up = await fetch(snap.upload_url, { method: 'PUT', headers: snap.upload_headers, body: archive });
  if (!up.ok) throw new Error(`upload -> ${up.status}: ${await up.text()}`);
  const fin = await call<{ status: string; failure_reason: string | null }>(base, key, 'POST', `/v1/source-snapshots/${snap.source_snapshot_id}/finalize`);
  if (fin.status !== 'ready') throw new Error(`finalize failed: ${fin.failure_reason}`);
  const manifest = JSON.parse(readFileSync(join(dir, 'troupe.json'), 'utf8')) as unknown;
  const agent = await call<{ id: string }>(base, key, 'POST', '/v1/agents', { name: 'weather-agent', manifest, source: { type: 'upload', source_snapshot_id: snap.source_snapshot_id } });
  return agent.id;
}

export async function runDemo(base: string, key: string, exampleDir: string, log: (line: string) => void): Promise<void> {
  const agentId = await deploy(base, key, exampleDir);
  log(`deployed examples/weather-agent as agent ${agentId}`);
  const first = await call<{ session: { id: string }; message: { id: string } }>(base, key, 'POST', `/v1/agents/${agentId}/messages`, {
    type: 'user.message',
    content: [{ type: 'text', text: 'What is the weather in Oslo today, in Fahrenheit too?' }],
  });
  const sid = first.session.id;
  const answered = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const m = await call<{ status: string }>(base, key, 'GET', `/v1/sessions/${sid}/messages/${first.message.id}`);
    if (['completed', 'failed', 'cancelled'].includes(m.status)) break;
    const { tool_calls } = await call<{ tool_calls: { message_id: string; tool_call_id: string; tool_name: string; kind: string; arguments: { city?: string } }[] }>(base, key, 'GET', `/v1/sessions/${sid}/tool-calls?status=pending`);
    for (const c of tool_calls.filter((t) => t.kind === 'external' && !answered.has(t.tool_call_id))) {
      // Stands in for the client's own forecast service.
      await call(base, key, 'POST', `/v1/sessions/${sid}/events`, {
        type: 'tool.result_submitted',
        message_id: c.message_id,
        tool_call_id: c.tool_call_id,
        result: { city: c.arguments.city ?? 'Oslo', summary: 'light rain in the afternoon', high_c: 12, low_c: 6, precipitation_mm: 2.5 },
      });
      answered.add(c.tool_call_id);
      log(`answered external tool call ${c.tool_name} (${c.tool_call_id})`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const res = await fetch(`${base}/v1/sessions/${sid}/transcript?format=text`, { headers: { Authorization: `Bearer ${key}` } });
  log(`transcript of session ${sid}:`);
  for (const line of (await res.text()).trimEnd().split('\n')) log(`  ${line}`);
}
