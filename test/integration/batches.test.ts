import assert from 'node:assert/strict';
import { onChildSettled } from '../../actors/batch/actor.js';
import { BATCH, batchJobId, type BatchChildSettled } from '../../src/domain/actors/batch.js';
import type { Send } from '../../src/domain/actors/address.js';
import { SESSION } from '../../src/domain/actors/session.js';
import { WEBHOOKS, type WebhookJob } from '../../src/domain/actors/webhook.js';
import { TroupeClient } from '../../clients/typescript/src/client.js';
import { createBatch } from '../../src/app/batches/create-batch.js';
import { newId } from '../../src/domain/ids.js';
import { batchItemSchema } from '../../src/edge/api/routes/session-batches/schema.js';
import { check } from '../../src/lib/schemas/validator.js';
import { AgentStore } from '../../src/store/agents.js';
import type { ToolDef } from '../../src/domain/agent.js';
import type { BatchItem } from '../../src/domain/views/batch-item.js';
import { WebhookReceiver } from '../fakes/webhook-receiver.js';
import { agentWith, scriptedAgent } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { json, until } from '../support/wait.js';

type Item = Omit<BatchItem, 'message_id'>;
interface Batch {
  batch_id: string;
  status: string;
  counts?: { queued: number; running: number; completed: number; failed: number };
  sessions: Item[];
}



const text = (t: string) => [{ type: 'text' as const, text: t }];
const ITEM_FIELDS = ['index', 'session_id', 'status', 'last_message_status', 'agent_id', 'version_id', 'llm_id', 'metadata', 'transcript_url', 'error'];

describe('session batches', () => {
  let h: Harness;
  let agentId: string;
  let versionId: string;
  let orgId: string;

  before(async () => {
    // No webhooks role: batch webhook jobs stay on the queue, where the test counts them.
    h = await startHarness({ roles: ['web', 'router', 'worker'], env: { TROUPE_SESSION_SHARDS: '4' } });
    ({ agentId, versionId, orgId } = await scriptedAgent(h, [{ text: 'Batch reply.' }]));
  });
  after(async () => {
    if (process.env.TROUPE_TEST_DUMP_ERRORS) for (const l of h.logs().split('\n')) if (/"level":"(error|warn)"/.test(l)) console.error(l.slice(0, 1500));
    await h?.close();
  });

  const post = (body: unknown, key?: string) => h.api('/v1/session-batches', { method: 'POST', json: body, headers: key ? { Authorization: `Bearer ${key}` } : {} });
  const read = async (id: string) => json<Batch>(await h.api(`/v1/session-batches/${id}`), 200);
  const item = (t: string, extra: Record<string, unknown> = {}) => ({ agent_id: agentId, message: { content: text(t) }, ...extra });

  async function webhookJobs(batchId: string): Promise<WebhookJob[]> {
    const jobs = await h.running.core.plane.queues.queue(WEBHOOKS.name).getJobs(['waiting', 'prioritized', 'active', 'completed', 'failed', 'delayed']);
    return jobs.map((j) => j.data as WebhookJob).filter((d) => d.kind === 'batch.lifecycle' && d.batch_id === batchId);
  }

  it('creates sessions in input order, failing bad items on their own', async () => {
    const body = { items: [item('one', { metadata: { row: '0' } }), item('two', { version_id: newId('version') }), item('three', { llm_id: 'nope' }), item('four', { llm_id: 'alt', version_id: versionId })] };
    const b = await json<Batch>(await post(body), 201);
    assert.match(b.batch_id, /^bat_/);
    assert.equal(b.status, 'queued');
    assert.deepEqual(b.sessions.map((s) => s.index), [0, 1, 2, 3]);
    for (const s of b.sessions) assert.deepEqual(Object.keys(s).sort(), [...ITEM_FIELDS].sort());
    const [ok, badVersion, badLlm, alt] = b.sessions;
    assert.match(ok.session_id!, /^ses_/);
    assert.equal(ok.status, 'running');
    assert.equal(ok.last_message_status, 'queued');
    assert.equal(ok.transcript_url, `/v1/sessions/${ok.session_id}/transcript`);
    assert.deepEqual(ok.metadata, { row: '0' });
    assert.equal(ok.version_id, versionId);
    assert.equal(ok.llm_id, 'main');
    assert.equal(ok.error, null);
    assert.equal(alt.llm_id, 'alt');
    for (const bad of [badVersion, badLlm]) {
      assert.equal(bad.status, 'failed');
      assert.equal(bad.session_id, null);
      assert.equal(typeof bad.error, 'string');
    }
    assert.match(badVersion.error!, /version/);
    assert.match(badLlm.error!, /llm_id/);

    // Children run through their actors; the batch reads them back.
    const done = await until(async () => {
      const r = await read(b.batch_id);
      return r.status === 'partial_failed' && r;
    });
    assert.deepEqual(done.counts, { queued: 0, running: 0, completed: 2, failed: 2 });
    assert.equal(done.sessions[0].last_message_status, 'completed');
    assert.equal(done.sessions[0].status, 'idle');
    const evs = await json<{ events: { sequence_number: number; type: string }[] }>(await h.api(`/v1/sessions/${ok.session_id}/events?limit=100`), 200);
    assert.deepEqual(evs.events.slice(0, 3).map((e) => [e.sequence_number, e.type]), [[1, 'user.message'], [2, 'message.status_changed'], [3, 'session.status_changed']]);
    assert.ok(evs.events.some((e) => e.type === 'assistant.message_completed'), 'the first turn ran');
    const transcript = await json<{ messages: { output: { parts: { text?: string }[] } }[] }>(await h.api(ok.transcript_url!), 200);
    assert.equal(transcript.messages[0].output.parts[0].text, 'Batch reply.');
  });

  it('answers status and counts alone with include_sessions=false, as the full read has them, in a small body', async () => {
    const b = await json<Batch>(await post({ items: [...Array.from({ length: 40 }, (_, i) => item(`light ${i}`, { metadata: { row: String(i) } })), item('bad', { llm_id: 'nope' })] }), 201);
    const raw = async (q: string) => {
      const res = await h.api(`/v1/session-batches/${b.batch_id}${q}`);
      assert.equal(res.status, 200);
      return res.text();
    };
    const done = await until(async () => {
      const r = await read(b.batch_id);
      return r.status === 'partial_failed' && r;
    });
    const [fullText, lightText, explicitFull] = await Promise.all([raw(''), raw('?include_sessions=false'), raw('?include_sessions=true')]);
    const full = JSON.parse(fullText) as Batch;
    const light = JSON.parse(lightText) as Batch;
    assert.deepEqual(light, { batch_id: b.batch_id, status: full.status, counts: full.counts });
    assert.deepEqual(full.counts, { queued: 0, running: 0, completed: 40, failed: 1 });
    assert.deepEqual(done.counts, full.counts);
    assert.equal(explicitFull, fullText, 'include_sessions=true is the default answer');
    assert.equal(full.sessions.length, 41);
    assert.ok(Buffer.byteLength(lightText) < 200, `${Buffer.byteLength(lightText)} bytes`);
    assert.ok(Buffer.byteLength(fullText) > 41 * 150, `${Buffer.byteLength(fullText)} bytes`);
    const bad = await json<{ error: { param: string } }>(await h.api(`/v1/session-batches/${b.batch_id}?include_sessions=no`), 400);
    assert.equal(bad.error.param, 'include_sessions');
  });

  it("the client's wait polls the light form and resolves with the full batch", async () => {
    const urls: string[] = [];
    const client = new TroupeClient({ baseUrl: h.baseUrl, apiKey: h.apiKey, fetch: (url, init) => (urls.push(String(url)), fetch(url, init)) });
    const created = await client.batches.create([{ agent_id: agentId, message: { content: text('w1') } }, { agent_id: agentId, message: { content: text('w2') } }]);
    const seen: (string | undefined)[] = [];
    const final = await client.batches.wait(created.batch_id, { timeoutMs: 20_000, pollMs: 20, onProgress: (p) => void seen.push(p.status) });
    assert.equal(final.status, 'completed');
    assert.equal(final.sessions.length, 2);
    const reads = urls.filter((u) => u.includes(`/v1/session-batches/${created.batch_id}`));
    assert.ok(reads.length >= 2, reads.join());
    assert.ok(reads.slice(0, -1).every((u) => u.endsWith('?include_sessions=false')), reads.join());
    assert.ok(!reads.at(-1)!.includes('include_sessions'), 'the last read has the items');
    assert.equal(seen.at(-1), 'completed');
  });

  it('fails an item whose message is larger than a stored message may be, creating the others', async function () {
    this.timeout(60_000);
    // 85 blocks of 200,000 characters: 17 MB, allowed by the batch body limit and the content schema, past
    // MongoDB's 16 MiB document limit. The driver refused the whole insert with it, so the batch was a 500.
    const huge = Array.from({ length: 85 }, () => ({ type: 'text' as const, text: 'y'.repeat(200_000) }));
    const b = await json<Batch>(await post({ items: [item('small'), { agent_id: agentId, message: { content: huge } }] }), 201);
    assert.equal(b.sessions[0].status, 'running');
    assert.equal(b.sessions[1].status, 'failed');
    assert.equal(b.sessions[1].session_id, null);
    assert.match(b.sessions[1].error!, /at most 8 MiB/);
  });

  it('returns the original batch for a reused idempotency_key, without new sessions', async () => {
    const key = `k-${Date.now()}`;
    const body = { idempotency_key: key, items: [item('a'), item('b'), item('c', { llm_id: 'nope' })] };
    const [r1, r2] = await Promise.all([post(body), post(body)]);
    const texts = [await r1.text(), await r2.text()];
    const statuses = [r1.status, r2.status].sort();
    // The race: one creates, the other replays or is told the first is in flight.
    assert.ok(statuses[0] === 201 && (statuses[1] === 201 || statuses[1] === 409), `statuses ${statuses}`);
    const first = JSON.parse(texts[r1.status === 201 ? 0 : 1]) as Batch;
    const again = await post(body);
    const againText = await again.text();
    assert.equal(again.status, 201);
    const replayed = JSON.parse(againText) as Batch;
    assert.equal(replayed.batch_id, first.batch_id);
    assert.deepEqual(replayed.sessions.map((s) => s.session_id), first.sessions.map((s) => s.session_id));
    assert.equal(againText, JSON.stringify(first), 'the replay is the original response');
    if (r1.status === 201 && r2.status === 201) assert.equal(texts[0], texts[1]);
    const stored = await h.running.core.db.collection('sessions').countDocuments({ batch_id: first.batch_id });
    assert.equal(stored, 2);
    assert.equal(await h.running.core.db.collection('batches').countDocuments({ org_id: orgId, idempotency_key: key }), 1);

    const changed = await post({ ...body, items: [item('other')] });
    assert.equal(changed.status, 422);
  });

  it('refuses only envelope problems with a 400, creating nothing', async () => {
    const before = await h.running.core.db.collection('sessions').countDocuments({});
    const mixed = await json<{ error: { param: string; code: string } }>(await post({ items: [item('a'), { ...item('b'), agent_id: newId('agent') }] }), 400);
    assert.equal(mixed.error.param, 'items[1].agent_id');
    assert.equal(mixed.error.code, 'mixed_agent_ids');
    const none = await json<{ error: { param: string } }>(await post({ items: [{ message: { content: text('x') } }] }), 400);
    assert.equal(none.error.param, 'items[0].agent_id');
    await json(await post({ items: [] }), 400);
    await json(await post({ items: { 0: item('a') } }), 400);
    await json(await post({ items: [item('a')], extra: 1 }), 400);
    assert.equal(await h.running.core.db.collection('sessions').countDocuments({}), before);
  });

  it('fails invalid items on their own with a clear error, creating the others, and replays the same result', async () => {
    const key = `k-items-${Date.now()}`;
    const body = {
      idempotency_key: key,
      items: [
        item('fine'),
        item('bad secret', { secrets: { 'bad-name': 'v' } }),
        { agent_id: agentId, message: {} },
        item('empty secret', { secrets: { GOOD: '' } }),
        'not an object',
        { message: { content: text('no agent id') } },
        item('bad block', { message: { content: [{ type: 'video', file_id: 'x' }] } }),
        item('also fine', { metadata: { n: '7' } }),
      ],
    };
    const res = await post(body);
    const raw = await res.text();
    assert.equal(res.status, 201, raw);
    const b = JSON.parse(raw) as Batch;
    assert.deepEqual(b.sessions.map((s) => s.status === 'failed'), [false, true, true, true, true, true, true, false]);
    assert.equal(b.sessions[0].error, null);
    assert.match(b.sessions[1].error!, /items\[1\]\.secrets/);
    assert.match(b.sessions[1].error!, /bad-name/);
    assert.match(b.sessions[2].error!, /items\[2\]\.message\.content is required/);
    assert.match(b.sessions[3].error!, /items\[3\]\.secrets\.GOOD/);
    assert.match(b.sessions[4].error!, /items\[4\] must be object/);
    assert.match(b.sessions[5].error!, /items\[5\]\.agent_id is required/);
    assert.match(b.sessions[6].error!, /items\[6\]\.message\.content\[0\]/);
    for (const s of b.sessions.filter((x) => x.status === 'failed')) {
      assert.equal(s.session_id, null);
      assert.equal(s.agent_id, agentId);
      assert.equal(s.transcript_url, null);
    }
    assert.deepEqual(b.sessions[7].metadata, { n: '7' });
    assert.equal(await h.running.core.db.collection('sessions').countDocuments({ batch_id: b.batch_id }), 2);
    assert.equal(b.status, 'queued');
    // The same key and body: the same answer, byte for byte, and no new sessions.
    const again = await post(body);
    assert.equal(again.status, 201);
    assert.equal(await again.text(), raw);
    assert.equal(await h.running.core.db.collection('sessions').countDocuments({ batch_id: b.batch_id }), 2);
    const done = await until(async () => {
      const r = await read(b.batch_id);
      return r.status === 'partial_failed' && r;
    });
    assert.deepEqual(done.counts, { queued: 0, running: 0, completed: 2, failed: 6 });
  });

  it('hides batches and agents of another organization (404)', async () => {
    const b = await json<Batch>(await post({ items: [item('mine')] }), 201);
    const other = await h.running.core.stores.orgs.create(`batch-other-${Date.now()}`);
    const { key } = await h.running.core.stores.apiKeys.create(other._id, 'api');
    await json(await h.api(`/v1/session-batches/${b.batch_id}`, { headers: { Authorization: `Bearer ${key}` } }), 404);
    await json(await post({ items: [item('theirs')] }, key), 404);
    await json(await h.api(`/v1/session-batches/${newId('batch')}`), 404);
  });

  it('fires a batch whose every item failed as batch.failed at once', async () => {
    const b = await json<Batch>(await post({ items: [item('x', { llm_id: 'nope' }), item('y', { llm_id: 'nope' })] }), 201);
    assert.equal(b.status, 'failed');
    const r = await read(b.batch_id);
    assert.equal(r.status, 'failed');
    assert.deepEqual(r.counts, { queued: 0, running: 0, completed: 0, failed: 2 });
    const jobs = await until(async () => (await webhookJobs(b.batch_id)).length > 0 && webhookJobs(b.batch_id));
    assert.deepEqual(jobs.map((j) => j.kind === 'batch.lifecycle' && j.type), ['batch.failed']);
  });

  it('fires the terminal webhook exactly once, however often children are reported', async () => {
    // Created without waking the sessions, so only the reports below settle its children.
    const dispatcher = h.running.core.plane.dispatcher;
    const asleep = { send: (sends: Send[]) => dispatcher.send(sends.filter((s) => s.to !== SESSION)) };
    const core = h.running.core;
    const body = { items: [item('p'), item('q'), item('r', { llm_id: 'nope' })] };
    const b = (await createBatch({ stores: core.stores, batches: core.stores.batches, agents: new AgentStore(core.db), box: core.box, outbox: asleep, publicUrl: core.config.publicUrl, checkItem: (i, n) => check(batchItemSchema, i, `items[${n}]`) }, orgId, body)) as Batch;
    const settled = (s: Item): BatchChildSettled => ({ org_id: orgId, batch_id: b.batch_id, session_id: s.session_id!, message_id: 'msg_x', status: 'completed' });
    const [p, q] = b.sessions;
    const deps = { batches: core.stores.batches, sessions: core.stores.sessions, outbox: dispatcher };
    // What the session actor writes before it reports a child (the report goes out after the write).
    const end = (s: Item) => core.db.collection('sessions').updateOne({ _id: s.session_id! as never }, { $set: { status: 'idle', last_message_status: 'completed' } });
    await end(p);
    // One child only: not terminal yet, however often it is reported.
    const early = await Promise.all(Array.from({ length: 5 }, () => onChildSettled(deps, settled(p))));
    assert.ok(!early.includes('fired'));
    assert.equal((await webhookJobs(b.batch_id)).length, 0);
    await end(q);
    // Through the queue, with duplicates under distinct job ids, and directly, concurrently.
    const queue = h.running.core.plane.queues.queue(BATCH.name);
    for (let i = 0; i < 3; i++) await queue.add('child.settled', settled(q), { jobId: `${batchJobId(settled(q))}-${i}` });
    const direct = await Promise.all(Array.from({ length: 10 }, () => onChildSettled(deps, settled(q))));
    await until(async () => {
      const c = await queue.getJobCounts('waiting', 'prioritized', 'active', 'delayed');
      return Object.values(c).every((n) => n === 0);
    });
    const jobs = await until(async () => (await webhookJobs(b.batch_id)).length > 0 && webhookJobs(b.batch_id));
    assert.equal(jobs.length, 1);
    assert.deepEqual(jobs[0], { kind: 'batch.lifecycle', org_id: orgId, agent_id: agentId, batch_id: b.batch_id, type: 'batch.partial_failed' });
    assert.ok(direct.filter((o) => o === 'fired').length <= 1);
    const rows = await h.running.core.db.collection('batch_settlements').find({ batch_id: b.batch_id }).toArray();
    assert.deepEqual(rows.filter((r) => String(r._id).startsWith('ses_')).map((r) => r._id).sort(), [p.session_id, q.session_id].sort());
    assert.equal(rows.filter((r) => String(r._id).endsWith('#terminal')).length, 1);
    // Reported again after firing: still one job.
    assert.notEqual(await onChildSettled(deps, settled(p)), 'fired');
    assert.equal((await webhookJobs(b.batch_id)).length, 1);
  });

  it('fires batch.completed when its children finish through the session actor (end to end)', async () => {
    const b = await json<Batch>(await post({ items: [item('e1'), item('e2')] }), 201);
    await until(async () => (await read(b.batch_id)).status === 'completed');
    const jobs = await until(async () => (await webhookJobs(b.batch_id)).length > 0 && webhookJobs(b.batch_id), 10_000);
    assert.deepEqual(jobs.map((j) => j.kind === 'batch.lifecycle' && j.type), ['batch.completed']);
  });
});

describe('session batches whose children are cancelled or deleted', () => {
  let h: Harness;
  let rx: WebhookReceiver;
  let agentId: string;
  // Each child waits for an external tool's result, so the test decides how it ends.
  const lookup: ToolDef = { name: 'lookup', kind: 'external', path: 'tools/l.json', timeout_seconds: 600, description: 'x', input_schema: { type: 'object' }, output_schema: null };

  before(async () => {
    rx = await WebhookReceiver.start();
    h = await startHarness({ env: { TROUPE_WEBHOOKS_ALLOW_PRIVATE: '1', TROUPE_SESSION_SHARDS: '4' } });
    ({ agentId } = await agentWith(h, {
      tools: [lookup],
      llm_options: [{ id: 'main', provider: 'scripted', script: 's.json' }],
      scripts: { main: { turns: [{ tool_calls: [{ name: 'lookup', arguments: {}, id: 'call_a' }] }, { text: 'looked up' }] } },
    }));
    await json(await h.api(`/v1/agents/${agentId}/webhook`, { method: 'PUT', json: { webhook_url: `${rx.url}/hook`, event_types: ['batch.completed', 'batch.failed', 'batch.partial_failed'] } }), 200);
  });
  after(async () => {
    await h?.close();
    await rx?.close();
  });

  const read = async (id: string) => json<Batch>(await h.api(`/v1/session-batches/${id}`), 200);
  const item = (t: string, extra: Record<string, unknown> = {}) => ({ agent_id: agentId, message: { content: text(t) }, ...extra });
  const session = async (id: string) => json<{ status: string; last_message_id: string; last_message_status: string }>(await h.api(`/v1/sessions/${id}`), 200);
  async function waitingOnTool(sessionId: string): Promise<string> {
    return until(async () => {
      const evs = await json<{ events: { type: string; data: { message_id?: string } }[] }>(await h.api(`/v1/sessions/${sessionId}/events?limit=100`), 200);
      return evs.events.find((e) => e.type === 'tool.call_requested')?.data.message_id;
    });
  }
  async function batchHooks(batchId: string): Promise<{ type: string; data: { batch_id: string; status: string; counts: Batch['counts'] } }[]> {
    return rx.received.map((r) => JSON.parse(r.rawBody)).filter((b) => b.data?.batch_id === batchId);
  }

  it('reaches a terminal status on GET, and its webhook carries the same counts, when children are cancelled or force-deleted', async function () {
    this.timeout(60_000);
    const b = await json<Batch>(await h.api('/v1/session-batches', { method: 'POST', json: { items: [item('a'), item('b'), item('c'), item('d'), item('e'), item('f', { llm_id: 'nope' })] } }), 201);
    const ids = b.sessions.map((s) => s.session_id);
    const messages = await Promise.all(ids.slice(0, 5).map((id) => waitingOnTool(id!)));
    // 0 and 1 complete; 1 is then deleted (no force needed: it is idle).
    for (const i of [0, 1]) {
      await json(await h.api(`/v1/sessions/${ids[i]}/events`, { method: 'POST', json: { type: 'tool.result_submitted', message_id: messages[i], tool_call_id: 'call_a', result: { ok: true } } }), 201);
    }
    await until(async () => (await session(ids[1]!)).last_message_status === 'completed');
    assert.equal((await h.api(`/v1/sessions/${ids[1]}`, { method: 'DELETE' })).status, 204);
    // 2 is cancelled; 3 and 4 are force-deleted while they wait.
    await json(await h.api(`/v1/sessions/${ids[2]}/messages/${messages[2]}/cancel`, { method: 'POST' }), 200);
    for (const i of [3, 4]) assert.equal((await h.api(`/v1/sessions/${ids[i]}?force=true`, { method: 'DELETE' })).status, 204);

    // The batch webhook fires once every child's end is recorded: once, naming the status the GET answers, with the same counts.
    const hooks = await until(async () => {
      const got = await batchHooks(b.batch_id);
      return got.length > 0 && got;
    });
    const done = await read(b.batch_id);
    assert.equal(done.status, 'partial_failed');
    assert.deepEqual(done.counts, { queued: 0, running: 0, completed: 2, failed: 4 });
    const c = done.counts!;
    assert.equal(c.queued + c.running + c.completed + c.failed, b.sessions.length, 'the counts add up to the items');
    assert.deepEqual(hooks.map((x) => [x.type, x.data.status]), [['batch.partial_failed', 'partial_failed']]);
    assert.deepEqual(hooks[0].data.counts, done.counts);
    // Deleted children say so, with how their message ended.
    assert.deepEqual(done.sessions.map((s) => [s.status, s.last_message_status]), [
      ['idle', 'completed'],
      ['deleted', 'completed'],
      ['idle', 'cancelled'],
      ['deleted', 'cancelled'],
      ['deleted', 'cancelled'],
      ['failed', null],
    ]);
    // Read again: the same.
    const again = await read(b.batch_id);
    assert.deepEqual([again.status, again.counts], [done.status, done.counts]);
    assert.equal((await batchHooks(b.batch_id)).length, 1);
  });

  it('reads a child gone without a recorded settlement as cancelled, so a batch stuck that way becomes terminal', async function () {
    this.timeout(30_000);
    const b = await json<Batch>(await h.api('/v1/session-batches', { method: 'POST', json: { items: [item('x'), item('y')] } }), 201);
    const [x, y] = b.sessions.map((s) => s.session_id!);
    const mx = await waitingOnTool(x);
    await waitingOnTool(y);
    await json(await h.api(`/v1/sessions/${x}/events`, { method: 'POST', json: { type: 'tool.result_submitted', message_id: mx, tool_call_id: 'call_a', result: {} } }), 201);
    // As a session deleted by an older release left it: the document gone, its message never settled for the batch.
    const core = h.running.core;
    assert.equal((await core.db.collection('sessions').deleteOne({ _id: y as never })).deletedCount, 1);
    assert.equal(await core.db.collection('batch_settlements').countDocuments({ _id: y as never }), 0);
    const done = await until(async () => {
      const r = await read(b.batch_id);
      return r.status !== 'running' && r;
    });
    assert.equal(done.status, 'partial_failed');
    assert.deepEqual(done.counts, { queued: 0, running: 0, completed: 1, failed: 1 });
    assert.deepEqual([done.sessions[1].status, done.sessions[1].last_message_status], ['deleted', 'cancelled']);
  });
});
