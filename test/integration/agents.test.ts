import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../support/harness.js';
import { createAgentFrom, gzipBomb, minimalAgent, readySnapshot, reserve, tarGz, type TarEntry } from '../support/archives.js';
import type { ErrorBody } from '../support/wire.js';

interface AgentBody {
  id: string;
  name: string;
  agent_url: string;
  active_version_id: string | null;
  created_at: string;
  deleted_at?: string;
}
interface VersionBody {
  id: string;
  number: number;
  active: boolean;
  source_snapshot_id: string;
  tools: { name: string; kind: string; input_schema: unknown }[];
}

describe('agents and versions', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ roles: ['web'] });
  });
  after(async () => {
    await h?.close();
  });

  const create = async (manifest: unknown, entries: TarEntry[]) => createAgentFrom(h, manifest, entries);
  const refusal = async (res: Response, status: number): Promise<ErrorBody['error']> => {
    const body = (await res.json()) as ErrorBody;
    assert.equal(res.status, status, JSON.stringify(body));
    return body.error;
  };

  it('creates an agent whose version carries compiled tools and scripts', async () => {
    const { manifest, entries } = minimalAgent();
    const res = await create(manifest, entries);
    assert.equal(res.status, 201);
    const agent = (await res.json()) as AgentBody;
    assert.match(agent.id, /^agt_/);
    assert.equal(agent.agent_url, `${h.running.core.config.publicUrl}/v1/agents/${agent.id}`);
    assert.match(agent.active_version_id!, /^ver_/);
    assert.equal('deleted_at' in agent, false);
    const version = (await h.running.core.stores.agents.activeVersion((await h.running.core.stores.orgs.byName('default'))!._id, agent.id))!;
    assert.equal(version.number, 1);
    assert.deepEqual(version.tools.map((t) => [t.name, t.kind, t.timeout_seconds]), [['get_weather', 'external', 30], ['add', 'custom', 60]]);
    assert.equal(version.tools[0].input_schema?.type, 'object');
    assert.deepEqual(version.scripts.script.turns[1], { text: 'It is mild.' });
    assert.deepEqual(version.manifest.sandbox.secrets, ['WEATHER_KEY']);
  });

  it('refuses a bad entrypoint form, a bad secret name and a duplicate tool name', async () => {
    const { manifest, entries } = minimalAgent();
    const snap = await readySnapshot(h, await tarGz(entries));
    const post = (m: unknown) => h.api('/v1/agents', { method: 'POST', json: { name: 'x', manifest: m, source: { type: 'upload', source_snapshot_id: snap } } });
    assert.equal((await refusal(await post({ ...manifest, entrypoint: 'agent.js' }), 400)).param, 'manifest.entrypoint');
    assert.equal((await refusal(await post({ ...manifest, sandbox: { secrets: ['bad-name'] } }), 400)).param, 'manifest.sandbox.secrets[0]');
    const dup = await refusal(await post({ ...manifest, custom_tools: [...(manifest.custom_tools as object[]), { name: 'add', path: 'tools/add.js' }] }), 400);
    assert.equal(dup.code, 'duplicate_tool_name');
    assert.equal((await refusal(await post({ ...manifest, sdk: 'other@1' }), 400)).param, 'manifest.sdk');
    const del = await h.api(`/v1/source-snapshots/${snap}`, { method: 'DELETE' });
    assert.equal(del.status, 204, 'refused publishes leave the snapshot unattached');
  });

  it('refuses a missing entrypoint or tool file', async () => {
    const { manifest, entries } = minimalAgent();
    const noEntry = await refusal(await create(manifest, entries.filter((e) => e.name !== 'agent.js')), 400);
    assert.deepEqual([noEntry.code, noEntry.param], ['archive_missing_file', 'manifest.entrypoint']);
    const noTool = await refusal(await create(manifest, entries.filter((e) => e.name !== 'tools/get_weather.json')), 400);
    assert.deepEqual([noTool.code, noTool.param], ['archive_missing_file', 'manifest.custom_tools[0].path']);
  });

  describe('hostile archives', () => {
    const hostile: [string, TarEntry[], string][] = [
      ['path traversal', [{ name: '../../etc/cron.d/x', content: 'x' }], 'archive_path_traversal'],
      ['an absolute path', [{ name: '/etc/passwd', content: 'x' }], 'archive_absolute_path'],
      ['a symlink escaping the root', [{ name: 'link', type: 'symlink', linkname: '../../../etc/passwd' }], 'archive_link_escape'],
      ['a hardlink escaping the root', [{ name: 'hard', type: 'link', linkname: '../outside' }], 'archive_link_escape'],
      ['too many entries', Array.from({ length: 10_001 }, (_, i) => ({ name: `f/${i}`, content: '' })), 'archive_too_many_entries'],
      ['a zip bomb', [{ name: 'bomb.bin', zeros: 101 * 1024 * 1024 }], 'archive_too_large'],
    ];
    for (const [what, extra, code] of hostile) {
      it(`refuses ${what}`, async function () {
        this.timeout(60_000);
        const { manifest, entries } = minimalAgent();
        const err = await refusal(await create(manifest, [...entries, ...extra]), 400);
        assert.equal(err.code, code, err.message);
        assert.equal(err.param, 'source.source_snapshot_id');
      });
    }
  });

  it('refuses a gzip bomb that is not even a tar, while inflating it', async function () {
    this.timeout(60_000);
    const snap = await readySnapshot(h, gzipBomb(150 * 1024 * 1024));
    const res = await h.api('/v1/agents', { method: 'POST', json: { name: 'x', manifest: minimalAgent().manifest, source: { type: 'upload', source_snapshot_id: snap } } });
    assert.equal((await refusal(res, 400)).code, 'archive_too_large');
  });

  it('refuses a snapshot that is not ready, and an unknown one', async () => {
    const { manifest, entries } = minimalAgent();
    const r = await reserve(h, await tarGz(entries));
    const post = (id: string) => h.api('/v1/agents', { method: 'POST', json: { name: 'x', manifest, source: { type: 'upload', source_snapshot_id: id } } });
    const pending = await refusal(await post(r.source_snapshot_id), 409);
    assert.equal(pending.code, 'snapshot_not_ready');
    assert.match(pending.message, /pending_upload/);
    assert.equal((await post('snap_01jzzzzzzzzzzzzzzzzzzzzzzz')).status, 404);
    const badSource = await h.api('/v1/agents', { method: 'POST', json: { name: 'x', manifest, source: { type: 'git', source_snapshot_id: r.source_snapshot_id } } });
    assert.equal((await refusal(badSource, 400)).param, 'source.type');
  });

  it('publishes versions, lists them, and keeps an attached snapshot', async () => {
    const { manifest, entries } = minimalAgent();
    const agent = (await (await create(manifest, entries)).json()) as AgentBody;
    const snap2 = await readySnapshot(h, await tarGz(entries));
    const publish = (activate?: boolean) =>
      h.api(`/v1/agents/${agent.id}/versions`, { method: 'POST', json: { manifest, source: { type: 'upload', source_snapshot_id: snap2 }, ...(activate === undefined ? {} : { activate }) } });
    const v2res = await publish();
    assert.equal(v2res.status, 201);
    const v2 = (await v2res.json()) as VersionBody;
    assert.deepEqual([v2.number, v2.active, v2.source_snapshot_id], [2, true, snap2]);
    const v3 = (await (await publish(false)).json()) as VersionBody;
    assert.deepEqual([v3.number, v3.active], [3, false]);
    const now = (await (await h.api(`/v1/agents/${agent.id}`)).json()) as AgentBody;
    assert.equal(now.active_version_id, v2.id, 'activate: false leaves the active version alone');
    const page1 = (await (await h.api(`/v1/agents/${agent.id}/versions?limit=2`)).json()) as { versions: VersionBody[]; has_more: boolean; next_cursor: string };
    assert.deepEqual([page1.versions.map((v) => v.number), page1.has_more], [[1, 2], true]);
    const page2 = (await (await h.api(`/v1/agents/${agent.id}/versions?limit=2&after=${page1.next_cursor}`)).json()) as { versions: VersionBody[]; has_more: boolean };
    assert.deepEqual([page2.versions.map((v) => v.number), page2.has_more], [[3], false]);
    const del = await h.api(`/v1/source-snapshots/${snap2}`, { method: 'DELETE' });
    assert.equal((await refusal(del, 409)).code, 'snapshot_attached');
  });

  it('soft-deletes idempotently, hides from listings, and refuses new versions', async () => {
    const { manifest, entries } = minimalAgent();
    const agent = (await (await create(manifest, entries)).json()) as AgentBody;
    const kept = (await (await create(manifest, entries)).json()) as AgentBody;
    const first = await h.api(`/v1/agents/${agent.id}`, { method: 'DELETE' });
    assert.equal(first.status, 200);
    const d1 = (await first.json()) as AgentBody;
    assert.deepEqual([d1.id, d1.name, d1.active_version_id, d1.created_at], [agent.id, agent.name, agent.active_version_id, agent.created_at]);
    assert.ok(d1.deleted_at);
    await new Promise((r) => setTimeout(r, 20));
    const d2 = (await (await h.api(`/v1/agents/${agent.id}`, { method: 'DELETE' })).json()) as AgentBody;
    assert.equal(d2.deleted_at, d1.deleted_at, 'the first deleted_at is kept');
    const read = (await (await h.api(`/v1/agents/${agent.id}`)).json()) as AgentBody;
    assert.equal(read.deleted_at, d1.deleted_at);
    const list = (await (await h.api('/v1/agents?limit=100')).json()) as { agents: AgentBody[] };
    assert.ok(!list.agents.some((a) => a.id === agent.id));
    assert.ok(list.agents.some((a) => a.id === kept.id), 'the others stay listed');
    const snap = await readySnapshot(h, await tarGz(entries));
    const pub = await h.api(`/v1/agents/${agent.id}/versions`, { method: 'POST', json: { manifest, source: { type: 'upload', source_snapshot_id: snap } } });
    assert.equal(pub.status, 404);
    assert.equal((await h.api(`/v1/agents/${agent.id}/versions`)).status, 200, 'existing versions stay readable');
  });

  it('pages agents', async () => {
    const page = (await (await h.api('/v1/agents?limit=1')).json()) as { agents: AgentBody[]; has_more: boolean; next_cursor: string };
    assert.equal(page.agents.length, 1);
    assert.equal(page.has_more, true);
    const next = (await (await h.api(`/v1/agents?limit=1&after=${page.next_cursor}`)).json()) as { agents: AgentBody[] };
    assert.ok(next.agents[0].id > page.agents[0].id);
    assert.equal((await h.api('/v1/agents?limit=0')).status, 400);
  });

  it('404s another org\u2019s agents and snapshots', async () => {
    const { manifest, entries } = minimalAgent();
    const agent = (await (await create(manifest, entries)).json()) as AgentBody;
    const snap = await readySnapshot(h, await tarGz(entries));
    const other = await h.running.core.stores.orgs.create(`other-${Date.now()}`);
    const { key } = await h.running.core.stores.apiKeys.create(other._id, 'api');
    const headers = { Authorization: `Bearer ${key}` };
    assert.equal((await h.api(`/v1/agents/${agent.id}`, { headers })).status, 404);
    assert.equal((await h.api(`/v1/agents/${agent.id}/versions`, { headers })).status, 404);
    assert.equal((await h.api(`/v1/agents/${agent.id}`, { method: 'DELETE', headers })).status, 404);
    const pub = await h.api(`/v1/agents/${agent.id}/versions`, { method: 'POST', headers, json: { manifest, source: { type: 'upload', source_snapshot_id: snap } } });
    assert.equal(pub.status, 404);
    const steal = await h.api('/v1/agents', { method: 'POST', headers, json: { name: 'x', manifest, source: { type: 'upload', source_snapshot_id: snap } } });
    assert.equal((await refusal(steal, 404)).code, 'source_snapshot_not_found');
    assert.deepEqual(((await (await h.api('/v1/agents', { headers })).json()) as { agents: unknown[] }).agents, []);
    assert.equal(((await (await h.api(`/v1/agents/${agent.id}`)).json()) as AgentBody).deleted_at, undefined, 'untouched for its owner');
  });
});
