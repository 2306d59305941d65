import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { Writable } from 'node:stream';
import { newId } from '../../src/domain/ids.js';
import { AgentStore } from '../../src/store/agents.js';
import type { Manifest, ToolDef } from '../../src/domain/agent.js';
import { BlobStore } from '../../src/store/blobs.js';
import { SESSION } from '../../src/domain/actors/session.js';
import { ROUTER_PROXY } from '../../src/domain/actors/router-proxy.js';
import { TOOL_RUNNER } from '../../src/domain/actors/tool-runner.js';
import { shardQueueName } from '../../actors/runtime/dispatcher.js';
import { startRoles, type Running } from '../../src/roles/start.js';
import { createLogger } from '../../src/lib/log/logger.js';
import { verifyWebhook } from '../../src/lib/webhooks/verify.js';
import { TroupeClient } from '../../clients/typescript/src/index.js';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { WebhookReceiver } from '../fakes/webhook-receiver.js';
import { tarGz } from '../support/archives.js';
import { startHarness, type Harness } from '../support/harness.js';
import { troupe } from '../support/troupe-cli.js';
import { json, until } from '../support/wait.js';
import type { ErrorBody, LedgerEvent } from '../support/wire.js';

type Ev = LedgerEvent;

const SHARDS = 2;
/** The custom tool: what it returns says it ran. */
const TOOL_SOURCE = 'exports.handler = async ({ path }) => ({ removed: path });';

/**
 * Tool approvals (issue #33 item 1) end to end: real Redis, MongoDB-wire and HTTP, the fake LLM as the provider
 * (so what the model is sent is seen), the sandboxed tool-runner, and a real webhook receiver. The worker role runs
 * apart from the web role, so a test can restart it while a confirmation waits.
 */
describe('tool approvals: always_ask, user.tool_confirmation', function () {
  this.timeout(30_000);
  let h: Harness;
  let worker: Running;
  let fake: FakeLlmUpstream;
  let rx: WebhookReceiver;
  let sandboxDir: string;
  let agentId: string;
  let quickAgentId: string;
  let secret: string;

  const startWorker = () => startRoles(['worker'], { ...h.env }, createLogger('warn', new Writable({ write: (_c, _e, cb) => cb() })));

  /** An agent whose custom tool `rm` is always_ask (timeout `seconds`) and `ls` always_allow, with its archive in GridFS. */
  async function askingAgent(seconds: number): Promise<string> {
    const core = h.running.core;
    const org = (await core.stores.orgs.byName('default'))!;
    const manifest: Manifest = {
      name: 'approvals',
      sdk: 'troupe-js@1',
      entrypoint: 'agent.js:agent',
      sandbox: { secrets: [], internet_access: false },
      custom_tools: [
        { name: 'rm', path: 'tools/rm.js', kind: 'custom', timeout_seconds: seconds, permission: 'always_ask' },
        { name: 'ls', path: 'tools/rm.js', kind: 'custom', timeout_seconds: 5 },
      ],
      llm_options: [{ id: 'main', provider: 'openai', model: 'm', base_url: fake.openaiBase, api_key_credential: 'FAKE_LLM_KEY' }],
    };
    const archive = await tarGz([
      { name: 'troupe.json', content: JSON.stringify(manifest) },
      { name: 'agent.js', content: 'exports.agent = {};' },
      { name: 'tools/rm.js', content: TOOL_SOURCE },
    ]);
    const snapshotId = newId('snapshot');
    await pipeline(Readable.from([archive]), new BlobStore(core.db).upload('snapshots', snapshotId, 'source.tar.gz', { org_id: org._id }));
    const tools: ToolDef[] = manifest.custom_tools.map((t) => ({ name: t.name, kind: 'custom', path: t.path, timeout_seconds: t.timeout_seconds, description: null, input_schema: null, output_schema: null, ...(t.permission ? { permission: t.permission } : {}) }));
    const { agent } = await new AgentStore(core.db).create(
      { id: newId('agent'), orgId: org._id, name: 'approvals' },
      { id: newId('version'), snapshotId, content: { manifest, llm_options: manifest.llm_options, tools, scripts: {}, entrypoint: manifest.entrypoint } },
    );
    return agent._id;
  }

  before(async () => {
    sandboxDir = await mkdtemp(join(tmpdir(), 'troupe-approvals-test-'));
    fake = await FakeLlmUpstream.start();
    rx = await WebhookReceiver.start();
    h = await startHarness({ roles: ['web', 'webhooks'], env: { TROUPE_SESSION_SHARDS: String(SHARDS), TROUPE_SANDBOX_DIR: sandboxDir, TROUPE_WEBHOOKS_ALLOW_PRIVATE: '1' } });
    worker = await startWorker();
    const org = (await h.running.core.stores.orgs.byName('default'))!;
    await h.running.core.stores.credentials.put(org._id, 'FAKE_LLM_KEY', 'sk-test');
    agentId = await askingAgent(60);
    quickAgentId = await askingAgent(1);
    const hook = await json<{ signing_secret: string }>(await h.api(`/v1/agents/${agentId}/webhook`, { method: 'PUT', json: { webhook_url: `${rx.url}/hook`, event_types: ['tool.confirmation_requested'] } }), 200);
    secret = hook.signing_secret;
  });
  after(async () => {
    await worker?.close();
    await h?.close();
    await fake?.close();
    await rx?.close();
    await rm(sandboxDir, { recursive: true, force: true });
  });
  beforeEach(() => {
    fake.reset();
    // The model calls the tools named by the user's text once, then answers with what the tool results said.
    fake.reply = (body) => {
      const messages = (body.messages ?? []) as { role: string; content: unknown }[];
      const results = messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
      if (results.length) return { text: `results: ${results.join(' | ')}` };
      const user = String(messages.filter((m) => m.role === 'user').at(-1)?.content ?? '');
      const names = user.split(' ').filter((w) => w === 'rm' || w === 'ls');
      return { toolCalls: names.map((name, i) => ({ id: `call_${i}`, name, arguments: { path: `/data/${i}` } })) };
    };
  });

  const events = async (sid: string) => (await json<{ events: Ev[] }>(await h.api(`/v1/sessions/${sid}/events?limit=100`), 200)).events;
  const newSession = async (agent = agentId) => (await json<{ id: string }>(await h.api(`/v1/agents/${agent}/sessions`, { method: 'POST', json: { llm_api_key: 'sk-test' } }), 201)).id;
  const send = async (sid: string, text: string) => (await json<{ message: { id: string } }>(await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text }] } }), 201)).message.id;
  const message = async (sid: string, mid: string) => json<{ status: string; output: { parts: { type: string; text?: string; is_error?: boolean; content?: { text: string }[] }[] } }>(await h.api(`/v1/sessions/${sid}/messages/${mid}`), 200);
  const confirm = (sid: string, body: Record<string, unknown>, headers: Record<string, string> = {}) => h.api(`/v1/sessions/${sid}/events`, { method: 'POST', headers, json: { type: 'user.tool_confirmation', ...body } });
  const refusal = async (res: Response, status: number) => {
    const body = (await res.json()) as ErrorBody;
    assert.equal(res.status, status, JSON.stringify(body));
    return body.error;
  };
  const asked = async (sid: string, n: number) => until(async () => {
    const evs = (await events(sid)).filter((e) => e.type === 'tool.confirmation_requested');
    return evs.length >= n ? evs : null;
  }, 10_000);
  const settled = async (sid: string, mid: string) => until(async () => {
    const m = await message(sid, mid);
    return ['completed', 'failed', 'cancelled'].includes(m.status) ? m : null;
  }, 15_000);
  /** Tool-runner jobs of a session, in any state: each is one run of a tool. */
  const runs = async (sid: string) => (await h.running.core.plane.queues.queue(TOOL_RUNNER.name).getJobs(['waiting', 'prioritized', 'active', 'completed', 'failed', 'delayed'])).filter((j) => j.data.session_id === sid);

  it('asks, holds no worker while it waits, delivers a signed webhook, and allow runs the tool once; a second answer is a 409', async () => {
    const sid = await newSession();
    const mid = await send(sid, 'please rm');
    const [req] = await asked(sid, 1);
    assert.deepEqual(Object.keys(req.data).sort(), ['arguments', 'expires_at', 'message_id', 'tool_call_id', 'tool_name']);
    assert.deepEqual([req.data.message_id, req.data.tool_call_id, req.data.tool_name, req.data.arguments], [mid, 'call_0', 'rm', { path: '/data/0' }]);
    const left = Date.parse(String(req.data.expires_at)) - Date.now();
    assert.ok(left > 50_000 && left <= 60_000, `expires in ${left} ms (the tool's timeout_seconds)`);
    await until(async () => (await message(sid, mid)).status === 'requires_action', 10_000);

    // The signed delivery.
    const [got] = await rx.waitFor(1);
    const body = JSON.parse(got.rawBody) as Record<string, unknown>;
    assert.equal(verifyWebhook({ secret, headers: got.headers, rawBody: got.rawBody }).id, `${sid}:${mid}:call_0:confirmation`);
    assert.throws(() => verifyWebhook({ secret: 'whsec_wrong', headers: got.headers, rawBody: got.rawBody }));
    assert.deepEqual([body.type, body.session_id, body.tool_call_id, body.expires_at], ['tool.confirmation_requested', sid, 'call_0', req.data.expires_at]);
    assert.match(String(body.submit_url), new RegExp(`/v1/sessions/${sid}/events$`));

    // Waiting holds nothing: no job active or queued on any actor, only the delayed expiry; nothing ran.
    const queues = h.running.core.plane.queues;
    const names = [...Array.from({ length: SHARDS }, (_, i) => shardQueueName(SESSION.name, i)), ROUTER_PROXY.name, TOOL_RUNNER.name];
    await until(async () => {
      const counts = await Promise.all(names.map((n) => queues.queue(n).getJobCounts('active', 'waiting', 'prioritized')));
      return counts.every((c) => c.active + c.waiting + c.prioritized === 0);
    }, 5000);
    const delayed = (await Promise.all(names.map((n) => queues.queue(n).getJobs(['delayed'])))).flat();
    assert.deepEqual(delayed.map((j) => j.data.command?.kind), ['tool.confirmation_expired']);
    assert.equal((await runs(sid)).length, 0, 'the tool has not run');

    const answer = () => confirm(sid, { message_id: mid, tool_call_id: 'call_0', result: 'allow' }, { 'Idempotency-Key': `allow-${sid}` });
    const first = await json<{ event: Ev }>(await answer(), 201);
    assert.deepEqual([first.event.type, first.event.data], ['user.tool_confirmation', { message_id: mid, tool_call_id: 'call_0', result: 'allow' }]);
    assert.equal((await json<{ event: Ev }>(await answer(), 201)).event.sequence_number, first.event.sequence_number, 'an Idempotency-Key replay answers the original');
    const second = await refusal(await confirm(sid, { message_id: mid, tool_call_id: 'call_0', result: 'deny' }), 409);
    assert.deepEqual([second.code, second.param], ['tool_call_not_awaiting_confirmation', 'tool_call_id']);

    const done = await settled(sid, mid);
    assert.equal(done.status, 'completed');
    assert.equal((await runs(sid)).length, 1, 'the tool ran once');
    const completed = (await events(sid)).filter((e) => e.type === 'tool.call_completed');
    assert.deepEqual(completed.map((e) => e.data.output), [{ removed: '/data/0' }]);
    assert.match(String(done.output.parts.at(-1)!.text), /removed/);
    assert.equal((await refusal(await confirm(sid, { message_id: mid, tool_call_id: 'call_0', result: 'allow' }), 409)).code, 'tool_call_not_awaiting_confirmation');
  });

  it('several calls in one turn are answered one by one: deny never runs its call and the model reads the deny message', async () => {
    const sid = await newSession();
    const mid = await send(sid, 'rm rm ls');
    await asked(sid, 2);
    // The always_allow call ran at once; the turn waits for both answers.
    await until(async () => (await events(sid)).some((e) => e.type === 'tool.call_completed'), 10_000);
    const client = new TroupeClient({ baseUrl: h.baseUrl, apiKey: h.apiKey });
    await client.sessions.confirmTool(sid, { message_id: mid, tool_call_id: 'call_0' }, 'deny', { denyMessage: 'never delete /data/0' });
    assert.equal((await message(sid, mid)).status, 'requires_action', 'call_1 still waits');
    assert.equal(fake.requests.length, 1, 'no model call before every call has its result');
    await client.sessions.confirmTool(sid, { message_id: mid, tool_call_id: 'call_1' }, 'allow');
    const done = await settled(sid, mid);
    assert.equal(done.status, 'completed');
    const evs = await events(sid);
    const failed = evs.filter((e) => e.type === 'tool.call_failed');
    assert.deepEqual(failed.map((e) => [e.data.tool_call_id, e.data.reason, e.data.error]), [['call_0', 'denied', 'never delete /data/0']]);
    const ran = (await runs(sid)).map((j) => j.data.tool_call_id).sort();
    assert.deepEqual(ran, ['call_1', 'call_2'], 'the denied call never ran');
    // The model's second request carries the deny message as call_0's result.
    assert.equal(fake.requests.length, 2);
    const toolMessages = ((fake.requests[1].body.messages ?? []) as { role: string; tool_call_id?: string; content: unknown }[]).filter((m) => m.role === 'tool');
    assert.match(String(toolMessages.find((m) => m.tool_call_id === 'call_0')?.content), /never delete \/data\/0/);
  });

  it('refuses bad answers: 400 naming the field, 404 for an unknown message or another org\'s session, 409 for a call that does not wait', async () => {
    const sid = await newSession();
    const mid = await send(sid, 'rm');
    await asked(sid, 1);
    const before = await events(sid);
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ message_id: mid, tool_call_id: 'call_0' }, /result/],
      [{ message_id: mid, tool_call_id: 'call_0', result: 'maybe' }, /result/],
      [{ message_id: mid, tool_call_id: 'call_0', result: 'deny', deny_message: 7 }, /deny_message/],
      [{ message_id: mid, result: 'allow' }, /tool_call_id/],
      [{ message_id: mid, tool_call_id: 'call_0', result: 'allow', is_error: true }, /is_error/],
    ];
    for (const [body, field] of bad) {
      const err = await refusal(await confirm(sid, body), 400);
      assert.match(`${err.param} ${err.message}`, field, JSON.stringify(body));
    }
    assert.equal((await refusal(await confirm(sid, { message_id: 'msg_nope', tool_call_id: 'call_0', result: 'allow' }), 404)).code, 'message_not_found');
    assert.equal((await refusal(await confirm(sid, { message_id: mid, tool_call_id: 'call_9', result: 'allow' }), 409)).code, 'tool_call_not_awaiting_confirmation');
    // Another org: the session is not there for it, and nothing runs.
    const other = await h.running.core.stores.orgs.create('approvals-other-org');
    const { key } = await h.running.core.stores.apiKeys.create(other._id, 'api');
    const foreign = await confirm(sid, { message_id: mid, tool_call_id: 'call_0', result: 'allow' }, { Authorization: `Bearer ${key}` });
    assert.equal((await refusal(foreign, 404)).code, 'session_not_found');
    assert.deepEqual(await events(sid), before, 'nothing recorded');
    assert.equal((await runs(sid)).length, 0);
    // A cancel while it waits fails the call as for an external tool; a late answer is then a 409.
    await json(await h.api(`/v1/sessions/${sid}/messages/${mid}/cancel`, { method: 'POST' }), 200);
    assert.equal((await settled(sid, mid)).status, 'cancelled');
    const failed = (await events(sid)).filter((e) => e.type === 'tool.call_failed');
    assert.deepEqual(failed.map((e) => [e.data.tool_call_id, e.data.reason]), [['call_0', 'cancelled']]);
    assert.equal((await refusal(await confirm(sid, { message_id: mid, tool_call_id: 'call_0', result: 'allow' }), 409)).code, 'tool_call_not_awaiting_confirmation');
  });

  it('an unanswered confirmation expires like an external call: a timeout the model is told of, and the tool never runs', async () => {
    const sid = await newSession(quickAgentId);
    const mid = await send(sid, 'rm');
    const done = await settled(sid, mid);
    assert.equal(done.status, 'completed');
    const failed = (await events(sid)).filter((e) => e.type === 'tool.call_failed');
    assert.deepEqual(failed.map((e) => [e.data.tool_call_id, e.data.reason]), [['call_0', 'timeout']]);
    assert.match(String(done.output.parts.at(-1)!.text), /No confirmation was given within 1 s/);
    assert.equal((await runs(sid)).length, 0);
  });

  it('survives a worker restart: the answer given to the new worker completes the message, and the CLI answers', async () => {
    const sid = await newSession();
    const mid = await send(sid, 'rm rm');
    await asked(sid, 2);
    await worker.close();
    worker = await startWorker();
    const cli = (args: string[]) => troupe(args, { TROUPE_BASE_URL: h.baseUrl, TROUPE_API_KEY: h.apiKey }, tmpdir(), 20_000);
    const approved = await cli(['approve', sid, 'call_0']);
    assert.equal(approved.code, 0, approved.stderr);
    const denied = await cli(['deny', sid, 'call_1', '--message', 'not this one']);
    assert.equal(denied.code, 0, denied.stderr);
    const again = await cli(['deny', sid, 'call_1']);
    assert.equal(again.code, 3, 'a second answer is refused by the API');
    const done = await settled(sid, mid);
    assert.equal(done.status, 'completed');
    assert.deepEqual((await runs(sid)).map((j) => j.data.tool_call_id), ['call_0']);
    const failed = (await events(sid)).filter((e) => e.type === 'tool.call_failed');
    assert.deepEqual(failed.map((e) => [e.data.tool_call_id, e.data.reason, e.data.error]), [['call_1', 'denied', 'not this one']]);
  });

  it('a batch item waits like any session and the batch counts it once it is answered', async () => {
    const b = await json<{ batch_id: string; sessions: { session_id: string }[] }>(
      await h.api('/v1/session-batches', { method: 'POST', json: { items: ['rm', 'ls'].map((t) => ({ agent_id: agentId, message: { content: [{ type: 'text', text: t }] }})) } }),
      201,
    );
    const batch = async () => json<{ status: string; counts: Record<string, number> }>(await h.api(`/v1/session-batches/${b.batch_id}`), 200);
    const [waiting] = b.sessions;
    const [req] = await asked(waiting.session_id, 1);
    await until(async () => (await batch()).counts.completed === 1, 10_000);
    const mid = String(req.data.message_id);
    assert.notEqual((await batch()).status, 'completed', 'the waiting item keeps the batch open');
    await json(await confirm(waiting.session_id, { message_id: mid, tool_call_id: 'call_0', result: 'allow' }), 201);
    const ended = await until(async () => {
      const x = await batch();
      return x.status === 'completed' ? x : null;
    }, 15_000);
    assert.equal(ended.counts.completed, 2);
  });
});
