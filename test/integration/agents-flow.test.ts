import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { startHarness, type Harness } from '../support/harness.js';
import { entriesOfDir, sha256, tarGz } from '../support/archives.js';

const EXAMPLE = resolve(__dirname, '../../../examples/weather-agent');

/** A free port, so TROUPE_PUBLIC_URL can name the address the server really listens on. */
function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => res(port));
    });
  });
}

describe('agent publishing, the official flow', () => {
  let h: Harness;
  let archive: Buffer;
  let manifest: Record<string, unknown>;
  before(async () => {
    const port = await freePort();
    h = await startHarness({ roles: ['web'], env: { PORT: String(port), TROUPE_PUBLIC_URL: `http://127.0.0.1:${port}` } });
    archive = await tarGz(await entriesOfDir(EXAMPLE));
    manifest = JSON.parse(await readFile(resolve(EXAMPLE, 'troupe.json'), 'utf8')) as Record<string, unknown>;
  });
  after(async () => {
    await h?.close();
  });

  /** Reserve, then upload to exactly the returned URL with exactly the returned headers, then finalize. */
  async function snapshot(): Promise<string> {
    const res = await h.api('/v1/source-snapshots', { method: 'POST', json: { format: 'tar.gz', sha256: sha256(archive), size_bytes: archive.length, metadata: { commit: 'example' } } });
    assert.equal(res.status, 201);
    const r = (await res.json()) as { source_snapshot_id: string; upload_url: string; upload_headers: Record<string, string> };
    const up = await fetch(r.upload_url, { method: 'PUT', headers: r.upload_headers, body: archive });
    assert.equal(up.status, 200, await up.clone().text());
    const fin = (await (await h.api(`/v1/source-snapshots/${r.source_snapshot_id}/finalize`, { method: 'POST' })).json()) as { status: string; failure_reason: string | null };
    assert.deepEqual(fin, { ...fin, source_snapshot_id: r.source_snapshot_id, status: 'ready', failure_reason: null });
    return r.source_snapshot_id;
  }

  it('reserve, upload, finalize, create, publish v2, refuse the snapshot delete, delete the agent twice', async () => {
    const snap1 = await snapshot();
    const created = await h.api('/v1/agents', { method: 'POST', json: { name: 'Weather', manifest, source: { type: 'upload', source_snapshot_id: snap1 } } });
    assert.equal(created.status, 201);
    const agent = (await created.json()) as { id: string; agent_url: string; active_version_id: string; name: string };
    assert.equal(agent.agent_url, `${h.baseUrl}/v1/agents/${agent.id}`);
    assert.equal(agent.name, 'Weather');

    const snap2 = await snapshot();
    const v2res = await h.api(`/v1/agents/${agent.id}/versions`, { method: 'POST', json: { manifest, source: { type: 'upload', source_snapshot_id: snap2 } } });
    assert.equal(v2res.status, 201);
    const v2 = (await v2res.json()) as { id: string; number: number; active: boolean };
    assert.deepEqual([v2.number, v2.active], [2, true]);
    assert.equal(((await (await h.api(`/v1/agents/${agent.id}`)).json()) as { active_version_id: string }).active_version_id, v2.id);

    for (const snap of [snap1, snap2]) {
      const del = await h.api(`/v1/source-snapshots/${snap}`, { method: 'DELETE' });
      assert.equal(del.status, 409);
      assert.equal(((await del.json()) as { error: { code: string } }).error.code, 'snapshot_attached');
    }

    const first = (await (await h.api(`/v1/agents/${agent.id}`, { method: 'DELETE' })).json()) as { deleted_at: string; active_version_id: string };
    const second = (await (await h.api(`/v1/agents/${agent.id}`, { method: 'DELETE' })).json()) as { deleted_at: string };
    assert.ok(first.deleted_at);
    assert.equal(second.deleted_at, first.deleted_at);
    assert.equal(first.active_version_id, v2.id, 'reports the version active at deletion');
  });

  it('the example agent compiles into the tools, schemas and script a turn needs', async () => {
    const snap = await snapshot();
    const agent = (await (await h.api('/v1/agents', { method: 'POST', json: { name: 'Weather', manifest, source: { type: 'upload', source_snapshot_id: snap } } })).json()) as { id: string };
    const org = (await h.running.core.stores.orgs.byName('default'))!;
    const v = (await h.running.core.stores.agents.activeVersion(org._id, agent.id))!;
    const [forecast, convert, wear] = v.tools;
    assert.deepEqual([forecast.name, forecast.kind, forecast.timeout_seconds], ['get_forecast', 'external', 120]);
    assert.deepEqual(forecast.input_schema?.required, ['city']);
    assert.deepEqual(forecast.output_schema?.required, ['city', 'summary', 'high_c', 'low_c']);
    assert.deepEqual([convert.name, convert.kind, convert.path, convert.output_schema], ['convert_temperature', 'custom', 'tools/convert_temperature.js', null]);
    assert.deepEqual(convert.input_schema?.required, ['value', 'to']);
    assert.deepEqual([wear.name, wear.kind, wear.path, wear.input_schema?.required], ['what_to_wear', 'custom', 'tools/what_to_wear.py', ['high_c', 'low_c']]);
    assert.equal(v.scripts.demo.turns.length, 3);
    assert.deepEqual(v.llm_options.map((o) => o.id), ['demo', 'gpt', 'claude', 'routed']);
    assert.equal(v.entrypoint, 'src/agent.js:agent');
  });
});
