import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { TroupeClient } from '../../clients/typescript/src/client.js';
import type { LedgerEvent, WebhookBody } from '../../clients/typescript/src/generated/api.js';
import type { EventOf } from '../../clients/typescript/src/stream.js';
import { parseWebhook } from '../../clients/typescript/src/webhooks.js';
import { EVENT_TYPES } from '../../src/domain/ledger.js';
import { newId } from '../../src/domain/ids.js';
import { AgentStore } from '../../src/store/agents.js';
import type { Manifest, ToolDef } from '../../src/domain/agent.js';
import { BlobStore } from '../../src/store/blobs.js';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { WebhookReceiver } from '../fakes/webhook-receiver.js';
import { tarGz } from '../support/archives.js';
import { startHarness, type Harness } from '../support/harness.js';
import { componentValidator } from '../support/openapi-schemas.js';
import { until } from '../support/wait.js';

type OpenApi = { components: { schemas: Record<string, unknown> }; webhooks: Record<string, { post: { requestBody: { content: { 'application/json': { schema: { $ref: string } } } } } }> };

const external = (name: string, timeout_seconds: number): ToolDef => ({
  name,
  kind: 'external',
  path: `tools/${name}.json`,
  timeout_seconds,
  description: null,
  input_schema: { type: 'object', properties: { city: { type: 'string' } } },
  output_schema: { type: 'object', required: ['temp_c'], properties: { temp_c: { type: 'number' } } },
});
const custom = (name: string): ToolDef => ({ name, kind: 'custom', path: `tools/${name}.js`, timeout_seconds: 10, description: null, input_schema: null, output_schema: null });

/**
 * Every ledger event a real session produces, read back from the list
 * endpoint and the SSE stream, and every webhook body a receiver gets, judged
 * by the per-type schemas of the document the server serves. The shapes are
 * closed (additionalProperties false), so an extra or a missing field fails.
 */
const CODE_RUN = `exports.agent = {
  async run(ctx) {
    ctx.emit('go');
    const [r] = await Promise.all([ctx.model({ llm_id: 'plain', input: 'hi' }), ctx.sleep(10)]);
    try { await ctx.model({ llm_id: 'flaky', input: 'x' }); } catch (e) { return r.text + ' / ' + e.name; }
    return r.text;
  },
};`;

describe('event and webhook shapes match /v1/openapi.json', function () {
  this.timeout(120_000);
  let h: Harness;
  let fake: FakeLlmUpstream;
  let rx: WebhookReceiver;
  let troupe: TroupeClient;

  before(async () => {
    fake = await FakeLlmUpstream.start();
    rx = await WebhookReceiver.start();
    // Every delivery fails, so each session-scoped one ends as webhook.delivery_failed; its body still arrives three times.
    rx.fallback = { status: 500 };
    h = await startHarness({ env: { TROUPE_SESSION_SHARDS: '2', TROUPE_WEBHOOKS_ALLOW_PRIVATE: '1', TROUPE_WEBHOOK_RETRY_SCHEDULE: '0.2,0.2' } });
    troupe = new TroupeClient({ baseUrl: h.baseUrl, apiKey: h.apiKey });
  });
  after(async () => {
    await h?.close();
    await fake?.close();
    await rx?.close();
  });

  /** An agent whose first model response calls every kind of tool: external (answered, and one left to time out), custom (succeeds, throws) and one it does not have. */
  async function agent(opts: { code?: boolean } = {}): Promise<string> {
    const core = h.running.core;
    const org = (await core.stores.orgs.byName('default'))!;
    // `ask` is always_ask (docs/approvals.md): denied in the first message, cancelled while it waits in the second.
    const tools = [external('get_weather', 30), external('late', 1), custom('add'), custom('boom'), { ...custom('ask'), permission: 'always_ask' as const }];
    const manifest: Manifest = {
      name: 'shapes',
      sdk: 'troupe-js@1',
      entrypoint: 'agent.js:agent',
      sandbox: { secrets: [], internet_access: false },
      custom_tools: tools.map((t) => ({ name: t.name, path: t.path, kind: t.kind, timeout_seconds: t.timeout_seconds })),
      llm_options: [
        { id: 'main', provider: 'scripted', script: 'main.json' },
        { id: 'plain', provider: 'scripted', script: 'plain.json' },
        { id: 'flaky', provider: 'openai', model: 'gpt-test', base_url: fake.openaiBase },
        { id: 'priced', provider: 'openai', model: 'gpt-test', base_url: fake.openaiBase, input_price: 0, output_price: 1000 },
      ],
    };
    const archive = await tarGz([
      { name: 'troupe.json', content: JSON.stringify(manifest) },
      // A code agent's run (the same archive as a declarative agent's, which ignores it): an emit, a model call and a sleep in parallel, a failed model call.
      { name: 'agent.js', content: CODE_RUN },
      { name: 'tools/add.js', content: 'exports.handler = async ({ a, b }) => ({ sum: a + b });' },
      { name: 'tools/boom.js', content: 'exports.handler = async () => { throw new Error("boom"); };' },
    ]);
    const snapshotId = newId('snapshot');
    await pipeline(Readable.from([archive]), new BlobStore(core.db).upload('snapshots', snapshotId, 'source.tar.gz', { org_id: org._id }));
    const calls = [
      { name: 'get_weather', arguments: { city: 'Oslo' }, id: 'call_w' },
      { name: 'late', arguments: {}, id: 'call_l' },
      { name: 'add', arguments: { a: 1, b: 2 }, id: 'call_a' },
      { name: 'boom', arguments: {}, id: 'call_b' },
      { name: 'nope', arguments: {}, id: 'call_n' },
      { name: 'ask', arguments: { really: true }, id: 'call_q' },
    ];
    const scripts = { main: { turns: [{ tool_calls: calls }, { text: 'Mild.' }] }, plain: { turns: [{ text: 'Hello.' }] } };
    const { agent } = await new AgentStore(core.db).create(
      { id: newId('agent'), orgId: org._id, name: 'shapes' },
      { id: newId('version'), snapshotId, content: { manifest, llm_options: manifest.llm_options, tools, scripts, entrypoint: manifest.entrypoint, ...(opts.code ? { agent_config: { code: true } } : {}) } },
    );
    return agent._id;
  }

  /** The whole ledger through the list endpoint, page by page. */
  async function listed(sessionId: string): Promise<LedgerEvent[]> {
    const out: LedgerEvent[] = [];
    for (let after: string | undefined; ; ) {
      const page = await troupe.sessions.events(sessionId, { limit: 7, after });
      out.push(...page.events);
      if (!page.has_more || !page.next_cursor) return out;
      after = page.next_cursor;
    }
  }

  /** Collects the session's SSE stream (the client's helper) until aborted. */
  function streamed(sessionId: string): { events: LedgerEvent[]; stop: () => void } {
    const events: LedgerEvent[] = [];
    const stop = new AbortController();
    void (async () => {
      for await (const ev of troupe.sessions.stream(sessionId, { signal: stop.signal })) if (ev.type !== 'assistant.delta') events.push(ev);
    })();
    return { events, stop: () => stop.abort() };
  }

  async function messageStatus(sessionId: string, messageId: string, statuses: string[]): Promise<void> {
    await until(async () => statuses.includes((await troupe.sessions.message(sessionId, messageId)).status), 30_000);
  }

  it('covers every event type and every webhook body, each exactly as documented', async () => {
    const doc = (await troupe.system.openapi()) as unknown as OpenApi;
    const problem = componentValidator(doc);
    const agentId = await agent();
    const put = await troupe.webhooks.put(agentId, { webhook_url: `${rx.url}/hook`, event_types: ['tool.call_requested', 'session.completed', 'session.failed', 'batch.completed', 'batch.failed', 'batch.partial_failed', 'tool.confirmation_requested'] });
    const secret = put.signing_secret!;
    const replies: LedgerEvent[] = [];

    // Session A: a message through every tool outcome to completion, then one cancelled while it waits.
    const a = await troupe.sessions.create(agentId, { llm_id: 'main' });
    const streamA = streamed(a.id);
    const first = await troupe.sessions.send(a.id, 'Weather in Oslo?');
    replies.push(first.event!);
    await until(async () => (await troupe.sessions.pendingToolCalls(a.id)).some((c) => c.tool_call_id === 'call_w'));
    const answered = await troupe.sessions.submitToolResult(a.id, { message_id: first.message!.id, tool_call_id: 'call_w' }, { temp_c: 4 });
    replies.push(answered.event!);
    const denied = await troupe.sessions.confirmTool(a.id, { message_id: first.message!.id, tool_call_id: 'call_q' }, 'deny', { denyMessage: 'not now' });
    replies.push(denied.event!);
    await messageStatus(a.id, first.message!.id, ['completed']);
    const second = await troupe.sessions.send(a.id, 'Again?', { metadata: { try: '2' } });
    replies.push(second.event!);
    await messageStatus(a.id, second.message!.id, ['requires_action']);
    const cancelled = await troupe.sessions.cancel(a.id, second.message!.id);
    replies.push(cancelled.event!);

    // Session B: a provider that keeps failing: retries, then the message fails.
    fake.failNext(503, 5);
    const b = await troupe.sessions.create(agentId, { llm_id: 'flaky', llm_api_key: 'sk-test' });
    const streamB = streamed(b.id);
    const third = await troupe.sessions.send(b.id, 'Hello?');
    replies.push(third.event!);
    await messageStatus(b.id, third.message!.id, ['failed']);

    // Session C: a code agent (agent.* events). B's retries may leave some of its failures unserved.
    fake.reset();
    fake.failNext(400, 1);
    const c = await troupe.sessions.create(await agent({ code: true }), { llm_id: 'plain', llm_api_key: 'sk-test' });
    const fourth = await troupe.sessions.send(c.id, 'Run.');
    await messageStatus(c.id, fourth.message!.id, ['completed']);

    // Session D: one priced call takes the session past its budget: budget.threshold_reached (80 and 100).
    fake.reset();
    const d = await troupe.sessions.create(agentId, { llm_id: 'priced', llm_api_key: 'sk-test', budget_usd: 0.001 });
    const fifth = await troupe.sessions.send(d.id, 'Hi');
    replies.push(fifth.event!);
    await messageStatus(d.id, fifth.message!.id, ['completed']);

    // A batch, for the batch lifecycle body.
    const batch = await troupe.batches.create([{ agent_id: agentId, llm_id: 'plain', message: { content: [{ type: 'text', text: 'Hi' }] } }]);
    assert.equal((await troupe.batches.wait(batch.batch_id, { timeoutMs: 30_000, pollMs: 200 })).status, 'completed');

    // Each session-scoped delivery (A: four tool calls, two confirmations and one session.completed; B: session.failed) exhausts its retries and is recorded in its session's ledger.
    const failures = (sid: string) => listed(sid).then((evs) => evs.filter((e) => e.type === 'webhook.delivery_failed').length);
    await until(async () => (await failures(a.id)) >= 7 && (await failures(b.id)) >= 1, 30_000);
    await until(async () => rx.received.some((r) => r.rawBody.includes('"batch.completed"')), 30_000);

    const ledgers = [await listed(a.id), await listed(b.id)];
    for (const [stream, ledger] of [[streamA, ledgers[0]], [streamB, ledgers[1]]] as const) {
      await until(async () => stream.events.length >= ledger.length);
      stream.stop();
      assert.deepEqual(stream.events, ledger, 'the stream carries exactly what the list returns');
    }
    const all = [...ledgers.flat(), ...(await listed(c.id)), ...(await listed(d.id)), ...replies];
    for (const ev of all) assert.equal(problem('LedgerEvent', ev), null, `${ev.type} #${ev.sequence_number}: ${JSON.stringify(ev.data)}`);
    assert.deepEqual([...new Set(all.map((e) => e.type))].sort(), [...EVENT_TYPES].sort(), 'every event type was produced');
    const reasons = all.flatMap((e) => (e.type === 'tool.call_failed' ? [e.data.reason] : []));
    assert.deepEqual([...new Set(reasons)].sort(), ['cancelled', 'denied', 'error', 'timeout', 'unknown_tool']);
    assert.ok(all.some((e) => e.type === 'message.status_changed' && e.data.retry_in_ms !== undefined && e.data.error), 'a retry was recorded');
    assert.ok(all.some((e) => e.type === 'message.status_changed' && e.data.to === 'failed' && e.data.error), 'a failure was recorded');

    // The schemas are closed: one field too many or too few is caught.
    const sample = ledgers[0].find((e): e is EventOf<'tool.call_completed'> => e.type === 'tool.call_completed')!;
    assert.match(String(problem('LedgerEvent', { ...sample, data: { ...sample.data, extra: 1 } })), /additional properties/);
    const missing: Record<string, unknown> = { ...sample.data };
    delete missing.tool_name;
    assert.match(String(problem('LedgerEvent', { ...sample, data: missing })), /required property 'tool_name'/);
    assert.match(String(problem('LedgerEvent', { ...sample, source: 'user' })), /constant/);

    // Every body the receiver got: signed, typed by the client, and exactly its webhook's schema.
    const kinds = new Set<string>();
    for (const r of rx.received) {
      const { body } = parseWebhook({ secret, headers: r.headers, rawBody: r.rawBody });
      const component = doc.webhooks[body.type].post.requestBody.content['application/json'].schema.$ref.split('/').pop()!;
      assert.equal(problem(component, body), null, `${body.type}: ${r.rawBody}`);
      kinds.add(body.type);
      assert.equal(r.headers['service-webhook-id'], body.id);
    }
    assert.deepEqual([...kinds].sort(), ['batch.completed', 'session.completed', 'session.failed', 'tool.call_requested', 'tool.confirmation_requested']);
    const tool = rx.received.map((r) => JSON.parse(r.rawBody) as WebhookBody).find((x) => x.type === 'tool.call_requested')!;
    assert.match(String(problem('ToolCallRequestedWebhook', { ...tool, input_schema: undefined })), /required property 'input_schema'/);
  });
});
