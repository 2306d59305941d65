import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { gzipBomb, minimalAgent, readySnapshot, tarGz, type TarEntry } from '../support/archives.js';
import { startHarness, type Harness } from '../support/harness.js';
import { hostileTraceCases, sendWithHeaders } from '../support/hostile-trace-headers.js';
import { tracingOn } from '../../src/lib/telemetry/tracing.js';

interface Outcome {
  what: string;
  status: number;
  code: string;
}

/** A POST that sends its headers and a first byte, then nothing: answered, or the socket closed, within `ms`. */
function slowLoris(port: number, path: string, key: string, ms: number): Promise<{ status: number; body: string; elapsed: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const sock = connect(port, '127.0.0.1');
    let got = '';
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no answer in ${ms} ms`));
    }, ms);
    sock.on('connect', () => sock.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`));
    sock.on('data', (d) => (got += d.toString()));
    sock.on('error', () => undefined);
    sock.on('close', () => {
      clearTimeout(timer);
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(got)?.[1] ?? 0), body: got.slice(got.indexOf('\r\n\r\n') + 4), elapsed: Date.now() - started });
    });
  });
}

describe('hostile input at volume', function () {
  this.timeout(300_000);
  let h: Harness;
  before(async () => {
    h = await startHarness({ roles: ['web'], env: { TROUPE_BODY_IDLE_TIMEOUT_MS: '2000' } });
  });
  after(async () => h?.close());

  async function publish(what: string, archive: Buffer): Promise<Outcome> {
    const { manifest } = minimalAgent();
    let snap: string;
    try {
      snap = await readySnapshot(h, archive);
    } catch (err) {
      // Refused at finalize: the snapshot is marked failed with a reason (a 200 that says so); counted as a refusal.
      if (!/^finalize failed: /.test((err as Error).message)) throw err;
      return { what, status: 400, code: (err as Error).message.slice(0, 80) };
    }
    const res = await h.api('/v1/agents', { method: 'POST', json: { name: what, manifest, source: { type: 'upload', source_snapshot_id: snap } } });
    const body = (await res.json()) as { error?: { code: string } };
    return { what, status: res.status, code: body.error?.code ?? '' };
  }

  it('answers every hostile request with a clear 4xx while /healthz stays fast', async () => {
    const { entries } = minimalAgent();
    const many: TarEntry[] = [...entries, ...Array.from({ length: 100_000 }, (_, i) => ({ name: `many/${i}`, content: '' }))];
    const archives: [string, Promise<Buffer>][] = [
      ['traversal', tarGz([...entries, { name: '../../evil.js', content: 'x' }])],
      ['backslash traversal', tarGz([...entries, { name: '..\\..\\evil.js', content: 'x' }])],
      ['absolute path', tarGz([...entries, { name: '/etc/cron.d/evil', content: 'x' }])],
      ['symlink out of the root', tarGz([...entries, { name: 'escape', type: 'symlink', linkname: '../../../etc/passwd' }])],
      ['hardlink out of the root', tarGz([...entries, { name: 'hard', type: 'link', linkname: '../outside' }])],
      ['gzip bomb', Promise.resolve(gzipBomb(512 * 1024 * 1024))],
      // Its subject is the entry count: gzip level 1 (the default 9 took seconds of the test's CPU here).
      ['100k entries', tarGz(many, { level: 1 })],
      ['not gzip', Promise.resolve(Buffer.from('PK\u0003\u0004 this is a zip, not a tarball'))],
      ['gzip but not tar', Promise.resolve(gzipSync(Buffer.from('just text, no tar headers at all'.repeat(100))))],
    ];
    const healthz: number[] = [];
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const t = Date.now();
        const res = await fetch(`${h.baseUrl}/healthz`);
        await res.text();
        assert.equal(res.status, 200);
        healthz.push(Date.now() - t);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const deep = '['.repeat(200_000) + ']'.repeat(200_000);
    const sid = 'ses_nonexistent';
    const json = async (what: string, path: string, body: string): Promise<Outcome> => {
      const res = await h.api(path, { method: 'POST', body, headers: { 'Content-Type': 'application/json' } });
      const parsed = (await res.json().catch(() => ({}))) as { error?: { code: string } };
      return { what, status: res.status, code: parsed.error?.code ?? '' };
    };
    const outcomes = await Promise.all([
      ...archives.map(async ([what, buf]) => publish(what, await buf)),
      json('oversized JSON', `/v1/sessions/${sid}/events`, JSON.stringify({ type: 'user.message', content: [{ type: 'text', text: 'x'.repeat(3 * 1024 * 1024) }] })),
      json('deeply nested JSON array', `/v1/sessions/${sid}/events`, deep),
      json('deeply nested JSON object', '/v1/session-batches', `{"items":[${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}]}`),
      json('malformed JSON', '/v1/session-batches', '{"items": [1, 2,'),
      ...Array.from({ length: 50 }, async (_, i) => {
        const r = await slowLoris(Number(new URL(h.baseUrl).port), '/v1/session-batches', h.apiKey, 20_000);
        return { what: `slow-loris upload ${i + 1}`, status: r.status, code: /"code":"(\w+)"/.exec(r.body)?.[1] ?? '' };
      }),
    ]);
    probing = false;
    await probe;
    for (const o of outcomes) assert.ok(o.status >= 400 && o.status < 500 && o.code !== '', `${o.what}: ${o.status} ${o.code}`);
    assert.equal(outcomes.find((o) => o.what === 'oversized JSON')!.status, 413);
    assert.ok(outcomes.filter((o) => o.what.startsWith('slow-loris')).every((o) => o.status === 408 && o.code === 'request_timeout'));
    const sorted = [...healthz].sort((a, b) => a - b);
    const p99 = sorted[Math.floor(sorted.length * 0.99)] ?? 0;
    const lines = new Map<string, number>();
    for (const o of outcomes) {
      const line = `${o.what.replace(/ \d+$/, '')}: ${o.status} ${o.code}`;
      lines.set(line, (lines.get(line) ?? 0) + 1);
    }
    process.stdout.write(`      ${[...lines].map(([l, n]) => (n > 1 ? `${l} (x${n})` : l)).join('\n      ')}\n      /healthz during the barrage: ${healthz.length} probes, median ${sorted[Math.floor(sorted.length / 2)]} ms, p99 ${p99} ms, max ${sorted.at(-1)} ms\n`);
    assert.ok(healthz.length > 5, 'the service was probed throughout');
    assert.ok(p99 < 2000, `/healthz p99 ${p99} ms`);
    const after = await fetch(`${h.baseUrl}/healthz`);
    assert.equal(after.status, 200);
  });

  it('with tracing off, hostile traceparent and tracestate headers change nothing: the usual answer, no trace id logged', async () => {
    // The traced side of these cases is test/integration/tracing.test.ts; this harness exports nothing.
    assert.equal(tracingOn(), false, 'this harness runs with tracing off');
    const cases = hostileTraceCases();
    const ids: string[] = [];
    for (const c of cases) {
      const res = await sendWithHeaders(`${h.baseUrl}/v1/agents`, { authorization: `Bearer ${h.apiKey}`, ...c.headers });
      assert.equal(res.status, 200, `${c.what}: ${res.body.slice(0, 300)}`);
      ids.push(res.requestId);
    }
    const lines = h.logs().split('\n').filter((l) => ids.some((id) => l.includes(id))).map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(lines.filter((l) => l.msg === 'request').length, cases.length, 'each request was logged');
    assert.deepEqual(lines.filter((l) => 'trace_id' in l || 'span_id' in l), [], 'no line carries a trace id');
    assert.equal((await fetch(`${h.baseUrl}/healthz`)).status, 200);
  });
});
