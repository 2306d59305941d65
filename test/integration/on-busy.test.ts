import assert from 'node:assert/strict';
import { ConflictError, TroupeClient } from '../../clients/typescript/src/index.js';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { agentWith } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { troupe } from '../support/troupe-cli.js';
import { json, until } from '../support/wait.js';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { newId } from '../../src/domain/ids.js';
import type { Manifest, ToolDef } from '../../src/domain/agent.js';
import { AgentStore } from '../../src/store/agents.js';
import { BlobStore } from '../../src/store/blobs.js';
import { tarGz } from '../support/archives.js';
import type { ErrorBody, LedgerEvent } from '../support/wire.js';
import { processesWith } from '../support/proc.js';

type Ev = LedgerEvent;

/** A reply that streams for about 20 s at the fake's event delay: long enough to be interrupted, and never waited out. */
const LONG = Array.from({ length: 200 }, (_, i) => `w${i}`).join(' ');

/** The user texts a chat-completions request sends, in order. */
function userTexts(body: Record<string, unknown>): string[] {
  const messages = (body.messages ?? []) as { role: string; content: unknown }[];
  return messages.filter((m) => m.role === 'user').map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));
}

/**
 * Busy-session policies (issue #33 item 2) end to end: real Redis, MongoDB-wire and HTTP, with the fake LLM as the
 * provider. A message whose text starts with `slow` streams for about 20 s; any other is answered at once.
 */
describe('on_busy: reject, interrupt and rollback', function () {
  this.timeout(30_000);
  let h: Harness;
  let fake: FakeLlmUpstream;
  let agentId: string;

  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ roles: ['web', 'worker'] });
    ({ agentId } = await agentWith(h, { llm_options: [{ id: 'main', provider: 'openai', model: 'm', base_url: fake.openaiBase }] }));
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });
  beforeEach(() => {
    fake.reset();
    fake.eventDelayMs = 100;
    fake.reply = (body) => {
      const last = userTexts(body).at(-1) ?? '';
      return { text: last.includes('slow') ? LONG : `answer to ${last}` };
    };
  });

  const events = async (sid: string) => (await json<{ events: Ev[] }>(await h.api(`/v1/sessions/${sid}/events?limit=100`), 200)).events;
  const newSession = async (body: Record<string, unknown> = {}, agent = agentId) => (await json<{ id: string }>(await h.api(`/v1/agents/${agent}/sessions`, { method: 'POST', json: { llm_api_key: 'sk-test', ...body } }), 201)).id;
  const post = (sid: string, text: string, onBusy?: string) => h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text }], ...(onBusy ? { on_busy: onBusy } : {}) } });
  const send = async (sid: string, text: string, onBusy?: string) => (await json<{ message: { id: string } }>(await post(sid, text, onBusy), 201)).message.id;
  const message = async (sid: string, mid: string) => json<{ status: string; output: { parts: { type: string; text?: string }[] } }>(await h.api(`/v1/sessions/${sid}/messages/${mid}`), 200);
  const refusal = async (res: Response, status: number) => {
    const body = (await res.json()) as ErrorBody;
    assert.equal(res.status, status, JSON.stringify(body));
    return body.error;
  };
  /** A session whose first message is streaming from the provider now. */
  const busySession = async (body: Record<string, unknown> = {}) => {
    const sid = await newSession(body);
    const mid = await send(sid, 'slow one');
    await until(async () => fake.requests.length === 1, 10_000);
    return { sid, mid };
  };

  /**
   * Cancels the slow message and waits until the fake saw its stream end, so the abort is counted here and not in
   * the next test's counts (on a loaded host it can arrive late).
   */
  const cancelAndWait = async (sid: string, mid: string) => {
    await json(await h.api(`/v1/sessions/${sid}/messages/${mid}/cancel`, { method: 'POST' }), 200);
    await until(async () => fake.abortedStreams + fake.closedEarly >= 1, 10_000);
  };

  it('rejects an unknown on_busy with 400 naming the field, on every intake and at session creation', async () => {
    const sid = await newSession();
    const bad = { on_busy: 'sometimes' };
    const cases: [string, Record<string, unknown>][] = [
      [`/v1/sessions/${sid}/events`, { type: 'user.message', content: [{ type: 'text', text: 'x' }], ...bad }],
      [`/v1/sessions/${sid}/messages/sync`, { parts: [{ type: 'text', text: 'x' }], ...bad }],
      [`/v1/agents/${agentId}/messages`, { type: 'user.message', content: [{ type: 'text', text: 'x' }], ...bad }],
      [`/v1/agents/${agentId}/sessions`, bad],
    ];
    for (const [path, body] of cases) {
      const err = await refusal(await h.api(path, { method: 'POST', json: body }), 400);
      assert.match(`${err.param} ${err.message}`, /on_busy/, path);
    }
    assert.deepEqual(await events(sid), [], 'nothing was recorded');
    // A session created without a default shows the one in force.
    assert.equal((await json<{ on_busy: string }>(await h.api(`/v1/sessions/${sid}`), 200)).on_busy, 'enqueue');
  });

  it('reject answers 409 session_busy while a message runs and records nothing; enqueue still queues', async () => {
    const { sid, mid } = await busySession();
    const before = await events(sid);
    const err = await refusal(await post(sid, 'not now', 'reject'), 409);
    assert.deepEqual([err.code, err.param], ['session_busy', 'on_busy']);
    const sync = await refusal(await h.api(`/v1/sessions/${sid}/messages/sync`, { method: 'POST', json: { parts: [{ type: 'text', text: 'not now' }], on_busy: 'reject' } }), 409);
    assert.equal(sync.code, 'session_busy');
    // The typed client carries it too.
    const client = new TroupeClient({ baseUrl: h.baseUrl, apiKey: h.apiKey });
    await assert.rejects(client.sessions.send(sid, 'not now', { onBusy: 'reject' }), (err: unknown) => err instanceof ConflictError && err.code === 'session_busy' && err.param === 'on_busy');
    // And the CLI: refused by the API (exit 3) with its message; a policy it does not know is a usage error (exit 2).
    const cli = (args: string[]) => troupe(args, { TROUPE_BASE_URL: h.baseUrl, TROUPE_API_KEY: h.apiKey }, tmpdir(), 20_000);
    const refused = await cli(['send', sid, 'not now', '--on-busy', 'reject']);
    assert.equal(refused.code, 3, refused.stderr);
    assert.match(refused.stderr, /session_busy|busy/);
    assert.equal((await cli(['send', sid, 'not now', '--on-busy', 'sometimes'])).code, 2);
    assert.deepEqual(await events(sid), before, 'the ledger is as it was');
    const listed = await json<{ messages: { id: string }[] }>(await h.api(`/v1/sessions/${sid}/messages`), 200);
    assert.deepEqual(listed.messages.map((m) => m.id), [mid]);
    assert.equal((await message(sid, mid)).status, 'running', 'the running message goes on');
    // The default (enqueue) still waits its turn behind it.
    const queued = await send(sid, 'later');
    assert.equal((await message(sid, queued)).status, 'queued');
    // A refusal keeps nothing of its Idempotency-Key either: the same key goes through once the session is free.
    const keyed = (text: string) => h.api(`/v1/sessions/${sid}/events`, { method: 'POST', headers: { 'Idempotency-Key': 'on-busy-key' }, json: { type: 'user.message', content: [{ type: 'text', text }], on_busy: 'reject' } });
    assert.equal((await refusal(await keyed('when free'), 409)).code, 'session_busy');
    await cancelAndWait(sid, mid);
    fake.eventDelayMs = 0;
    await until(async () => (await message(sid, queued)).status === 'completed', 10_000);
    await until(async () => (await json<{ status: string }>(await h.api(`/v1/sessions/${sid}`), 200)).status === 'idle', 10_000);
    const accepted = await json<{ message: { id: string } }>(await keyed('when free'), 201);
    await until(async () => (await message(sid, accepted.message.id)).status === 'completed', 10_000);
  });

  it('reject set as the session default at creation applies to messages without their own', async () => {
    const tag = `default-${Date.now()}`;
    const created = await json<{ id: string; on_busy: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: { llm_api_key: 'sk-test', on_busy: 'reject', metadata: { tag } } }), 201);
    const sid = created.id;
    // The default reads back wherever the session is shown: creation, GET, the list, and a turn's reply.
    assert.equal(created.on_busy, 'reject');
    assert.equal((await json<{ on_busy: string }>(await h.api(`/v1/sessions/${sid}`), 200)).on_busy, 'reject');
    const listed = await json<{ sessions: { id: string; on_busy: string }[] }>(await h.api(`/v1/sessions?metadata.tag=${tag}`), 200);
    assert.deepEqual(listed.sessions.map((x) => [x.id, x.on_busy]), [[sid, 'reject']]);
    const sent = await json<{ message: { id: string }; session: { on_busy: string } }>(await post(sid, 'slow one'), 201);
    assert.equal(sent.session.on_busy, 'reject');
    const mid = sent.message.id;
    await until(async () => fake.requests.length === 1, 10_000);
    assert.equal((await refusal(await post(sid, 'not now'), 409)).code, 'session_busy');
    const queued = await send(sid, 'but this waits', 'enqueue');
    assert.equal((await message(sid, queued)).status, 'queued');
    // An idle session takes a rejecting message: a new session through POST /v1/agents/{id}/messages.
    const first = await json<{ message: { id: string }; session: { id: string } }>(
      await h.api(`/v1/agents/${agentId}/messages`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text: 'hello' }], on_busy: 'reject', session: { llm_api_key: 'sk-test', on_busy: 'reject' } } }),
      201,
    );
    await until(async () => (await message(first.session.id, first.message.id)).status === 'completed', 10_000);
    assert.equal((await json<{ on_busy: string }>(await h.api(`/v1/sessions/${first.session.id}`), 200)).on_busy, 'reject');
    // The default is the session's own: this session's first message did not change the other's.
    assert.equal((await refusal(await post(sid, 'still not now'), 409)).code, 'session_busy');
    await cancelAndWait(sid, mid);
    fake.eventDelayMs = 0;
    await until(async () => (await message(sid, queued)).status === 'completed', 10_000);
  });

  it("another org cannot interrupt or roll back a session: 404, and the running message goes on", async () => {
    const { sid, mid } = await busySession();
    const other = await h.running.core.stores.orgs.create('on-busy-other-org');
    const { key } = await h.running.core.stores.apiKeys.create(other._id, 'api');
    const before = await events(sid);
    for (const policy of ['interrupt', 'rollback', 'reject']) {
      const res = await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, json: { type: 'user.message', content: [{ type: 'text', text: 'mine now' }], on_busy: policy } });
      assert.equal((await refusal(res, 404)).code, 'session_not_found', policy);
      const sync = await h.api(`/v1/sessions/${sid}/messages/sync`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, json: { parts: [{ type: 'text', text: 'mine now' }], on_busy: policy } });
      assert.equal(sync.status, 404, policy);
      await sync.arrayBuffer();
    }
    assert.deepEqual(await events(sid), before, 'nothing recorded');
    assert.equal((await message(sid, mid)).status, 'running');
    assert.equal(fake.abortedStreams + fake.closedEarly, 0, 'the provider call was not aborted');
    await cancelAndWait(sid, mid);
  });

  it('interrupt cancels the slow model call in flight and starts the new message at once, which keeps the cancelled turn in its history', async () => {
    const { sid, mid } = await busySession();
    const started = Date.now();
    const next = await send(sid, 'change of plan', 'interrupt');
    await until(async () => fake.abortedStreams >= 1 || fake.closedEarly >= 1, 10_000);
    await until(async () => (await message(sid, next)).status === 'completed', 10_000);
    assert.ok(Date.now() - started < 15_000, 'the new message did not wait out the slow one');
    assert.equal((await message(sid, mid)).status, 'cancelled');
    const evs = await events(sid);
    const cancelled = evs.find((e) => e.type === 'message.status_changed' && e.message_id === mid && e.data.to === 'cancelled')!;
    assert.deepEqual([cancelled.data.interrupted_by, cancelled.data.on_busy], [next, 'interrupt']);
    assert.ok(!evs.some((e) => e.type === 'assistant.message_completed' && e.message_id === mid), 'the aborted call reports nothing');
    const started2 = evs.find((e) => e.type === 'message.status_changed' && e.message_id === next && e.data.to === 'running')!;
    assert.ok(started2.sequence_number > cancelled.sequence_number);
    assert.equal(fake.requests.length, 2);
    assert.deepEqual(userTexts(fake.requests[1].body).map((t) => t.includes('slow one')), [true, false], 'the interrupted turn stays in the history');
    assert.equal((await message(sid, next)).output.parts[0].text, 'answer to change of plan');
    assert.equal((await json<{ status: string }>(await h.api(`/v1/sessions/${sid}`), 200)).status, 'idle');
  });

  it('a retried interrupt whose first answer was lost is answered with the new message, not the one it cancelled', async () => {
    const { sid, mid } = await busySession();
    const keyed = () => h.api(`/v1/sessions/${sid}/events`, { method: 'POST', headers: { 'Idempotency-Key': 'interrupt-retry' }, json: { type: 'user.message', content: [{ type: 'text', text: 'change of plan' }], on_busy: 'interrupt' } });
    const first = await json<{ event: Ev; message: { id: string; status: string } }>(await keyed(), 201);
    assert.deepEqual([first.event.type, first.message.status], ['user.message', 'queued']);
    assert.notEqual(first.message.id, mid);
    // As after a worker died before the web stored the answer: the key's record is gone, the command is in the ledger.
    await h.running.core.db.collection('idempotency_keys').deleteMany({ key: 'interrupt-retry' });
    const again = await json<{ event: Ev; message: { id: string; status: string } }>(await keyed(), 201);
    assert.deepEqual([again.event.type, again.event.sequence_number, again.message.id, again.message.status], ['user.message', first.event.sequence_number, first.message.id, 'queued']);
    await until(async () => (await message(sid, first.message.id)).status === 'completed', 10_000);
    const evs = await events(sid);
    assert.equal(evs.filter((e) => e.type === 'user.message').length, 2, 'the retry recorded nothing');
    assert.equal(evs.filter((e) => e.type === 'message.status_changed' && e.message_id === mid && e.data.to === 'cancelled').length, 1);
  });

  it('rollback cancels the running message the same way, and no later model call includes the cancelled turn', async () => {
    const { sid, mid } = await busySession();
    // messages/sync takes it too, and answers with the new message once it is done.
    const res = await h.api(`/v1/sessions/${sid}/messages/sync`, { method: 'POST', json: { parts: [{ type: 'text', text: 'start over' }], on_busy: 'rollback' } });
    const done = await json<{ id: string; status: string }>(res, 200);
    assert.equal(done.status, 'completed');
    assert.equal((await message(sid, mid)).status, 'cancelled');
    const after = await send(sid, 'and then');
    await until(async () => (await message(sid, after)).status === 'completed', 10_000);
    assert.equal(fake.requests.length, 3);
    const second = userTexts(fake.requests[1].body);
    const third = userTexts(fake.requests[2].body);
    assert.equal(second.length, 1, JSON.stringify(second));
    assert.match(second[0], /start over/);
    assert.equal(third.length, 2, JSON.stringify(third));
    assert.ok(!third.some((t) => t.includes('slow one')), 'the rolled-back turn is left out');
    // The ledger keeps it: rollback is a history rule, not a deletion.
    const evs = await events(sid);
    assert.ok(evs.some((e) => e.type === 'user.message' && e.message_id === mid));
    const cancelled = evs.find((e) => e.type === 'message.status_changed' && e.message_id === mid && e.data.to === 'cancelled')!;
    assert.deepEqual([cancelled.data.interrupted_by, cancelled.data.on_busy], [done.id, 'rollback']);
  });
  it('interrupt aborts a running custom tool: its sandbox process is gone, the call fails cancelled, the output so far stays and the new message completes', async () => {
    // The tool names its process with a marker (so it can be looked for) and sleeps far longer than the test.
    const marker = `troupe-nap-${randomBytes(4).toString('hex')}`;
    const napAgent = await agentWithNapTool(marker);
    fake.eventDelayMs = 0;
    fake.reply = (body) => {
      const last = userTexts(body).at(-1) ?? '';
      return last.includes('nap') ? { text: 'Napping first.', toolCalls: [{ id: 'call_nap', name: 'nap', arguments: {} }] } : { text: `answer to ${last}` };
    };
    const sid = await newSession({}, napAgent);
    const mid = await send(sid, 'please nap');
    await until(async () => processesWith(marker).length > 0, 20_000);
    const started = Date.now();
    const next = await send(sid, 'wake up', 'interrupt');
    await until(async () => processesWith(marker).length === 0, 8_000);
    await until(async () => (await message(sid, next)).status === 'completed', 10_000);
    assert.ok(Date.now() - started < 10_000, 'the new message did not wait out the tool');
    assert.equal((await message(sid, next)).output.parts[0].text, 'answer to wake up');
    const cancelled = await message(sid, mid);
    assert.equal(cancelled.status, 'cancelled');
    assert.deepEqual(cancelled.output.parts.filter((p) => p.type !== 'tool_result').map((p) => [p.type, p.text ?? (p as { name?: string }).name]), [['text', 'Napping first.'], ['tool_call', 'nap']], 'its output so far is kept');
    const evs = await events(sid);
    const failed = evs.filter((e) => e.type === 'tool.call_failed' && e.message_id === mid);
    assert.deepEqual(failed.map((e) => [e.data.tool_call_id, e.data.reason, e.data.kind]), [['call_nap', 'cancelled', 'custom']]);
    assert.ok(!evs.some((e) => e.type === 'tool.call_completed'), 'the tool never completed');
    const stopped = evs.find((e) => e.type === 'message.status_changed' && e.message_id === mid && e.data.to === 'cancelled')!;
    assert.deepEqual([stopped.data.interrupted_by, stopped.data.on_busy], [next, 'interrupt']);
    assert.ok(failed[0].sequence_number < stopped.sequence_number, 'the call fails before its message ends');
    assert.equal((await json<{ status: string }>(await h.api(`/v1/sessions/${sid}`), 200)).status, 'idle');
  });

  /** An agent on the fake provider whose one custom tool, `nap`, renames its process to `marker` and sleeps 60 s. */
  async function agentWithNapTool(marker: string): Promise<string> {
    const core = h.running.core;
    const org = (await core.stores.orgs.byName('default'))!;
    const manifest: Manifest = {
      name: 'nap',
      sdk: 'troupe-js@1',
      entrypoint: 'agent.js:agent',
      sandbox: { secrets: [], internet_access: false },
      custom_tools: [{ name: 'nap', path: 'tools/nap.js', kind: 'custom', timeout_seconds: 90 }],
      llm_options: [{ id: 'main', provider: 'openai', model: 'm', base_url: fake.openaiBase }],
    };
    const source = `exports.handler = async () => { process.title = '${marker}'; await new Promise((r) => setTimeout(r, 60000)); return { rested: true }; };`;
    const archive = await tarGz([
      { name: 'troupe.json', content: JSON.stringify(manifest) },
      { name: 'agent.js', content: 'exports.agent = {};' },
      { name: 'tools/nap.js', content: source },
    ]);
    const snapshotId = newId('snapshot');
    await pipeline(Readable.from([archive]), new BlobStore(core.db).upload('snapshots', snapshotId, 'source.tar.gz', { org_id: org._id }));
    const tool: ToolDef = { name: 'nap', kind: 'custom', path: 'tools/nap.js', timeout_seconds: 90, description: null, input_schema: null, output_schema: null };
    const { agent } = await new AgentStore(core.db).create(
      { id: newId('agent'), orgId: org._id, name: 'nap' },
      { id: newId('version'), snapshotId, content: { manifest, llm_options: manifest.llm_options, tools: [tool], scripts: {}, entrypoint: manifest.entrypoint } },
    );
    return agent._id;
  }
});
