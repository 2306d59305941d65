import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { newId } from '../../src/domain/ids.js';
import { AgentStore } from '../../src/store/agents.js';
import type { Manifest, ToolDef } from '../../src/domain/agent.js';
import { BlobStore } from '../../src/store/blobs.js';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { agentWith } from '../support/agent-fixture.js';
import { tarGz } from '../support/archives.js';
import { startHarness, type Harness } from '../support/harness.js';
import { SseClient } from '../support/sse.js';
import { json, until } from '../support/wait.js';
import type { LedgerEvent } from '../support/wire.js';

type Ev = LedgerEvent;

const SLOW_TOOL = `const fs = require('node:fs'); const os = require('node:os'); const path = require('node:path');
exports.handler = async (_args, ctx) => {
  fs.writeFileSync(path.join(os.tmpdir(), 'started'), 'yes');
  fs.writeFileSync(path.join(ctx.storageDir, 'started.txt'), 'yes');
  await new Promise((r) => setTimeout(r, 20000));
  fs.writeFileSync(path.join(ctx.storageDir, 'finished.txt'), 'yes');
  return { done: true };
};`;

describe('cancel stops work', function () {
  this.timeout(60_000);
  let h: Harness;
  let fake: FakeLlmUpstream;
  let sandboxDir: string;

  before(async () => {
    sandboxDir = await mkdtemp(join(tmpdir(), 'troupe-cancel-test-'));
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ roles: ['web', 'worker'], env: { TROUPE_SESSION_SHARDS: '2', TROUPE_SANDBOX_DIR: sandboxDir } });
  });
  after(async () => {
    await h?.close();
    await fake?.close();
    await rm(sandboxDir, { recursive: true, force: true });
  });

  const events = async (sid: string) => (await json<{ events: Ev[] }>(await h.api(`/v1/sessions/${sid}/events?limit=100`), 200)).events;
  const newSession = async (agentId: string, body: Record<string, unknown> = {}) => (await json<{ id: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: body }), 201)).id;
  const send = async (sid: string) => (await json<{ message: { id: string } }>(await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text: 'go' }] } }), 201)).message.id;
  const cancel = (sid: string, mid: string) => h.api(`/v1/sessions/${sid}/messages/${mid}/cancel`, { method: 'POST' });

  it('aborts the model call in flight: the provider request is closed and no delta follows the cancel event', async () => {
    fake.reset();
    fake.eventDelayMs = 100;
    fake.reply = { text: 'one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen' };
    const { agentId } = await agentWith(h, { llm_options: [{ id: 'main', provider: 'openai', model: 'slow-model', base_url: fake.openaiBase }] });
    const sid = await newSession(agentId, { llm_api_key: 'sk-test' });
    const stream = new SseClient(`${h.baseUrl}/v1/sessions/${sid}/stream?deltas=true`, { Authorization: `Bearer ${h.apiKey}` });
    await stream.open();
    try {
      const mid = await send(sid);
      await stream.waitFor((r) => r.filter((x) => x.event === 'assistant.delta').length >= 2);
      const res = await cancel(sid, mid);
      assert.equal(res.status, 200, await res.text());
      await stream.waitFor((r) => r.some((x) => x.event === 'message.status_changed' && JSON.parse(x.data).data.to === 'cancelled'));
      // Longer than the rest of the slow stream would take to trickle in.
      await new Promise((r) => setTimeout(r, 2500));
      const cancelAt = stream.records.findIndex((x) => x.event === 'message.status_changed' && JSON.parse(x.data).data.to === 'cancelled');
      const after = stream.records.slice(cancelAt + 1).filter((x) => x.event === 'assistant.delta');
      assert.deepEqual(after, [], 'no delta after the cancel event');
      await until(async () => fake.abortedStreams === 1);
      const evs = await events(sid);
      assert.ok(!evs.some((e) => e.type === 'assistant.message_completed'), 'the aborted call reports nothing');
      assert.equal((await json<{ status: string }>(await h.api(`/v1/sessions/${sid}/messages/${mid}`), 200)).status, 'cancelled');
      assert.equal((await json<{ status: string }>(await h.api(`/v1/sessions/${sid}`), 200)).status, 'idle');
    } finally {
      await stream.close();
    }
  });

  it('fails pending external tool calls with tool.call_failed (reason cancelled) before the cancel', async () => {
    const ext: ToolDef = { name: 'lookup', kind: 'external', path: 'tools/l.json', timeout_seconds: 600, description: 'x', input_schema: { type: 'object' }, output_schema: null };
    const { agentId } = await agentWith(h, {
      tools: [ext],
      llm_options: [{ id: 'main', provider: 'scripted', script: 's.json' }],
      scripts: { main: { turns: [{ tool_calls: [{ name: 'lookup', arguments: {}, id: 'call_a' }, { name: 'lookup', arguments: {}, id: 'call_b' }] }, { text: 'never' }] } },
    });
    const sid = await newSession(agentId);
    const mid = await send(sid);
    await until(async () => (await events(sid)).filter((e) => e.type === 'tool.call_requested').length === 2);
    const reply = await json<{ event: Ev; message: { status: string } }>(await cancel(sid, mid), 200);
    assert.equal(reply.event.type, 'message.status_changed', 'the reply is the cancel event');
    assert.equal(reply.message.status, 'cancelled');
    const evs = await events(sid);
    const failed = evs.filter((e) => e.type === 'tool.call_failed');
    assert.deepEqual(failed.map((e) => [e.data.tool_call_id, e.data.reason, e.data.kind]), [['call_a', 'cancelled', 'external'], ['call_b', 'cancelled', 'external']]);
    const cancelledAt = evs.find((e) => e.type === 'message.status_changed' && e.data.to === 'cancelled')!.sequence_number;
    assert.ok(failed.every((e) => e.sequence_number < cancelledAt));
    // A repeated cancel is the same command again: the same answer, nothing new in the ledger.
    for (let i = 0; i < 2; i++) {
      const again = await json<{ event: Ev; message: { status: string } }>(await cancel(sid, mid), 200);
      assert.deepEqual([again.event.type, again.event.sequence_number, again.message.status], ['message.status_changed', cancelledAt, 'cancelled']);
    }
    assert.equal((await events(sid)).length, evs.length);
    // A late result is refused: the call is no longer pending.
    const late = await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'tool.result_submitted', message_id: mid, tool_call_id: 'call_a', result: {} } });
    assert.equal(late.status >= 400 && late.status < 500, true, `late result answered ${late.status}`);
  });

  it('stops a running custom tool: its process is killed and it never finishes', async () => {
    const core = h.running.core;
    const org = (await core.stores.orgs.byName('default'))!;
    const manifest: Manifest = {
      name: 'slow',
      sdk: 'troupe-js@1',
      entrypoint: 'agent.js:agent',
      sandbox: { secrets: [], internet_access: false },
      custom_tools: [{ name: 'slow', path: 'tools/slow.js', kind: 'custom', timeout_seconds: 30 }],
      llm_options: [{ id: 'main', provider: 'scripted', script: 's.json' }],
    };
    const archive = await tarGz([
      { name: 'troupe.json', content: JSON.stringify(manifest) },
      { name: 'agent.js', content: 'exports.agent = {};' },
      { name: 'tools/slow.js', content: SLOW_TOOL },
    ]);
    const snapshotId = newId('snapshot');
    await pipeline(Readable.from([archive]), new BlobStore(core.db).upload('snapshots', snapshotId, 'source.tar.gz', { org_id: org._id }));
    const tool: ToolDef = { name: 'slow', kind: 'custom', path: 'tools/slow.js', timeout_seconds: 30, description: null, input_schema: null, output_schema: null };
    const scripts = { main: { turns: [{ tool_calls: [{ name: 'slow', arguments: {}, id: 'call_slow' }] }, { text: 'done' }] } };
    const { agent } = await new AgentStore(core.db).create(
      { id: newId('agent'), orgId: org._id, name: 'slow' },
      { id: newId('version'), snapshotId, content: { manifest, llm_options: manifest.llm_options, tools: [tool], scripts, entrypoint: manifest.entrypoint } },
    );
    const binding = await json<{ id: string }>(await h.api('/v1/storage-bindings', { method: 'POST', json: { name: `cancel-${Date.now()}` } }), 201);
    const sid = await newSession(agent._id, { storage_binding_id: binding.id });
    const mid = await send(sid);
    // The tool's own scratch is a tmpfs inside its sandbox; the storage checkout is the host folder it writes to.
    const scratch = join(sandboxDir, 'scratch');
    const startedIn = async () => {
      for (const d of await readdir(scratch).catch(() => [] as string[])) if (await stat(join(scratch, d, 'started.txt')).catch(() => null)) return true;
      return false;
    };
    await until(startedIn, 20_000);
    const t0 = Date.now();
    await json(await cancel(sid, mid), 200);
    // The run ends (its scratch dirs are removed) long before the tool's 20 s sleep.
    await until(async () => (await readdir(scratch)).length === 0, 8000);
    assert.ok(Date.now() - t0 < 8000);
    const evs = await events(sid);
    const failed = evs.filter((e) => e.type === 'tool.call_failed');
    assert.deepEqual(failed.map((e) => [e.data.tool_call_id, e.data.reason, e.data.kind]), [['call_slow', 'cancelled', 'custom']]);
    assert.ok(!evs.some((e) => e.type === 'tool.call_completed'));
    const files = await json<{ files: { path: string }[] }>(await h.api(`/v1/storage-bindings/${binding.id}/files`), 200);
    assert.deepEqual(files.files.map((f) => f.path), ['started.txt'], 'the tool never reached its end');
  });
});
