import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Manifest, ToolDef } from '../../src/domain/agent.js';
import { newId } from '../../src/domain/ids.js';
import { AgentStore } from '../../src/store/agents.js';
import { BlobStore } from '../../src/store/blobs.js';
import { candidate } from '../fakes/llm-conversation.js';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { KIND, OtlpCollector, type CollectedSpan } from '../fakes/otlp-collector.js';
import { WebhookReceiver } from '../fakes/webhook-receiver.js';
import { tarGz } from '../support/archives.js';
import { startHarness, type Harness } from '../support/harness.js';
import { hostileTraceCases, sendWithHeaders, type HostileTraceCase } from '../support/hostile-trace-headers.js';
import { startRoleProcess, type RoleProcess } from '../support/role-process.js';
import { json, until } from '../support/wait.js';

const hex = (n: number) => randomBytes(n).toString('hex');

/** An agent whose model (the fake, OpenAI format) calls the custom tool `add` once, then answers. */
async function toolAgent(h: Harness, fake: FakeLlmUpstream): Promise<string> {
  const core = h.running.core;
  const org = (await core.stores.orgs.byName('default'))!;
  const llm_options = [{ id: 'main', provider: 'openai' as const, model: 'gpt-trace', base_url: fake.openaiBase }];
  const manifest: Manifest = {
    name: 'traced',
    sdk: 'troupe-js@1',
    entrypoint: 'agent.js:agent',
    sandbox: { secrets: ['TOOL_TOKEN'], internet_access: false },
    custom_tools: [{ name: 'add', path: 'tools/add.js', kind: 'custom', timeout_seconds: 10 }],
    llm_options,
  };
  const archive = await tarGz([
    { name: 'troupe.json', content: JSON.stringify(manifest) },
    { name: 'agent.js', content: 'exports.agent = { instructions: "Add numbers." };' },
    { name: 'tools/add.js', content: 'exports.handler = async ({ a, b }, ctx) => ({ sum: a + b, token_seen: typeof ctx.secrets.TOOL_TOKEN });' },
  ]);
  const snapshotId = newId('snapshot');
  await pipeline(Readable.from([archive]), new BlobStore(core.db).upload('snapshots', snapshotId, 'source.tar.gz', { org_id: org._id }));
  const tool: ToolDef = { name: 'add', kind: 'custom', path: 'tools/add.js', timeout_seconds: 10, description: 'Adds.', input_schema: null, output_schema: null };
  const { agent } = await new AgentStore(core.db).create(
    { id: newId('agent'), orgId: org._id, name: 'traced' },
    { id: newId('version'), snapshotId, content: { manifest, llm_options, tools: [tool], scripts: {}, entrypoint: manifest.entrypoint } },
  );
  return agent._id;
}

/** The span's ancestors, nearest first, as far as the trace holds them. */
function ancestry(span: CollectedSpan, all: CollectedSpan[]): CollectedSpan[] {
  const byId = new Map(all.map((s) => [s.spanId, s]));
  const out: CollectedSpan[] = [];
  for (let p = byId.get(span.parentSpanId); p && out.length < 100; p = byId.get(p.parentSpanId)) out.push(p);
  return out;
}

/**
 * Traces end to end, across processes: web (with router) and worker (with webhooks) run as their own OS processes
 * and export to an in-process OTLP receiver, the first over http/json, the second over http/protobuf.
 * One user message sent with a traceparent makes one connected trace from the HTTP request to the webhook
 * delivery; a routed call continues its caller's traceparent too.
 */
describe('OpenTelemetry traces across processes', function () {
  this.timeout(60_000);
  let h: Harness;
  let fake: FakeLlmUpstream;
  let rx: WebhookReceiver;
  let collector: OtlpCollector;
  let sandboxDir: string;
  const procs: RoleProcess[] = [];
  let web: RoleProcess;
  let routerUrl = '';

  before(async () => {
    [fake, rx, collector] = await Promise.all([FakeLlmUpstream.start(), WebhookReceiver.start(), OtlpCollector.start()]);
    sandboxDir = await mkdtemp(join(tmpdir(), 'troupe-tracing-test-'));
    // The harness's own process (bootstrap keys, fixtures) is not traced: only the spawned roles export.
    h = await startHarness({ roles: ['router'], env: { TROUPE_SESSION_SHARDS: '2', TROUPE_WEBHOOKS_ALLOW_PRIVATE: '1', TROUPE_SANDBOX_DIR: sandboxDir } });
    const otel = (protocol: string) => ({ ...h.env, OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_EXPORTER_OTLP_PROTOCOL: protocol, OTEL_BSP_SCHEDULE_DELAY: '100', METRICS_PORT: '0' });
    // Two processes (each start loads the whole service, the slow part of this file): web with router, worker with
    // webhooks. Opted in to content, the router's model-call spans carry the prompt; the worker's do not.
    const settled = await Promise.allSettled([
      startRoleProcess(['web', 'router'], { ...otel('http/json'), ROUTER_PORT: '0', TROUPE_OTEL_CAPTURE_CONTENT: 'true' }),
      startRoleProcess(['worker', 'webhooks'], otel('http/protobuf')),
    ]);
    // Every process that came up is killed after, also when another did not.
    for (const r of settled) if (r.status === 'fulfilled') procs.push(r.value);
    const failed = settled.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    web = procs[0];
    routerUrl = `http://127.0.0.1:${web.ports.router}`;
    await procs[1].waitForLog('metrics listening');
  });

  after(async () => {
    for (const p of procs) p.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.exited));
    await h?.close();
    await Promise.all([fake?.close(), rx?.close(), collector?.close()]);
    if (sandboxDir) await rm(sandboxDir, { recursive: true, force: true });
  });

  it('one message is one trace: request, queue hops, turns, model calls, tool run and webhook delivery, with GenAI attributes and no secret', async () => {
    const base = `http://127.0.0.1:${web.ports.web}`;
    const api = (path: string, init: { method?: string; json?: unknown; headers?: Record<string, string> } = {}) =>
      fetch(base + path, { method: init.method ?? 'GET', headers: { authorization: `Bearer ${h.apiKey}`, 'content-type': 'application/json', ...init.headers }, body: init.json === undefined ? undefined : JSON.stringify(init.json) });
    const agentId = await toolAgent(h, fake);
    const hook = await json<{ signing_secret: string }>(await api(`/v1/agents/${agentId}/webhook`, { method: 'PUT', json: { webhook_url: `${rx.url}/hook`, event_types: ['session.completed'] } }), 200);
    const llmKey = `sk-trace-${hex(12)}`;
    const toolToken = `tok-${hex(12)}`;
    const question = `What is two plus three? marker-${hex(6)}`;
    const answer = `It is five. answer-${hex(6)}`;
    fake.reply = (body) => (JSON.stringify(body).includes('token_seen') ? { text: answer, inputTokens: 21, outputTokens: 9 } : { toolCalls: [{ id: 'call_add', name: 'add', arguments: { a: 2, b: 3 } }], inputTokens: 13, outputTokens: 5 });
    const sid = (await json<{ id: string }>(await api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: { llm_api_key: llmKey, secrets: { TOOL_TOKEN: toolToken } } }), 201)).id;

    const traceId = hex(16);
    const callerSpan = hex(8);
    const sent = await json<{ message: { id: string } }>(
      await api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text: question }] }, headers: { traceparent: `00-${traceId}-${callerSpan}-01` } }),
      201,
    );
    await until(async () => (await json<{ status: string }>(await api(`/v1/sessions/${sid}/messages/${sent.message.id}`), 200)).status === 'completed', 20_000).catch(async (e) => {
      const events = await (await api(`/v1/sessions/${sid}/events`)).text();
      throw new Error(`${(e as Error).message}; ledger: ${events.slice(-3000)}\nworker: ${procs[1].lines.slice(-30).join('\n')}`);
    });
    await rx.waitFor(1, '/hook', 15_000);

    // Exported every 100 ms by each process: bounded wait for the last hop's span and for every parent (a consumer
    // span ends, and is exported, after the child it wraps). Past the bound the assertions below say what is missing.
    const connected = (t: ReturnType<typeof collector.trace>) => {
      const present = new Set(t.map((s) => s.spanId));
      return t.every((s) => s.parentSpanId === callerSpan || present.has(s.parentSpanId));
    };
    const spans = await until(async () => {
      const t = collector.trace(traceId);
      return t.some((s) => s.name === 'webhook POST') && t.filter((s) => s.name === 'chat gpt-trace').length >= 2 && t.some((s) => s.name === 'execute_tool add') && connected(t) ? t : null;
    }, 10_000).catch(() => collector.trace(traceId));
    const names = spans.map((s) => `${s.roles}:${s.name}`).sort().join('\n');

    // The root continues the caller's span; every other span's parent is in the trace: one connected tree.
    const root = spans.find((s) => s.kind === KIND.server);
    assert.ok(root, names);
    assert.equal(root.name, 'POST /v1/sessions/{session_id}/events');
    assert.equal(root.parentSpanId, callerSpan);
    assert.equal(root.attributes['http.response.status_code'], 201);
    const ids = new Set(spans.map((s) => s.spanId));
    assert.deepEqual(spans.filter((s) => s !== root && !ids.has(s.parentSpanId)).map((s) => s.name), [], `orphans in:\n${names}`);

    // Across separate processes, over both encodings.
    assert.deepEqual(new Set(spans.map((s) => s.roles)), new Set(['web+router', 'worker+webhooks']), names);
    assert.deepEqual(new Set(spans.map((s) => s.encoding)), new Set(['json', 'protobuf']));
    assert.ok(spans.every((s) => s.service === 'troupe'));

    // The chain: the webhook delivery descends from the tool run's message, which descends from the first model
    // call's message, which descends from the user's message turn and its queue hop, up to the request.
    const delivery = spans.find((s) => s.name === 'webhook POST')!;
    assert.equal(delivery.kind, KIND.client);
    assert.equal(delivery.attributes['http.response.status_code'], 200);
    const up = ancestry(delivery, spans);
    assert.equal(up.at(-1), root, `webhook POST reaches the request:\n${up.map((s) => s.name).join(' <- ')}`);
    const tool = spans.find((s) => s.name === 'execute_tool add')!;
    assert.equal(tool.attributes['gen_ai.operation.name'], 'execute_tool');
    assert.equal(tool.attributes['gen_ai.tool.name'], 'add');
    assert.equal(tool.attributes['gen_ai.tool.call.id'], 'call_add');
    assert.notEqual(tool.status, 2, 'the tool run succeeded');
    const toolMessage = spans.find((s) => s.spanId === tool.parentSpanId)!;
    assert.equal(toolMessage.kind, KIND.consumer);
    assert.match(toolMessage.name, /^tool-runner /);
    assert.ok(up.includes(toolMessage), 'the delivery descends from the tool run');
    const chats = spans.filter((s) => s.name === 'chat gpt-trace');
    for (const chat of chats) {
      const parent = spans.find((s) => s.spanId === chat.parentSpanId)!;
      assert.match(parent.name, /^router-proxy /, 'a model call runs in a router-proxy message');
      assert.ok(ancestry(parent, spans).includes(root));
    }
    const first = ancestry(chats[0], spans);
    const hops = first.map((s) => s.name).reverse();
    assert.deepEqual(hops.slice(0, 3), ['POST /v1/sessions/{session_id}/events', 'send session', 'session user.message'], hops.join(' -> '));
    assert.equal(first.find((s) => s.name === 'send session')!.kind, KIND.producer);
    assert.equal(first.find((s) => s.name === 'session user.message')!.kind, KIND.consumer);
    assert.equal(first.find((s) => s.name === 'session user.message')!.roles, 'worker+webhooks');
    assert.equal(root.roles, 'web+router');

    // GenAI semantic conventions on each model call, with the fake's token counts.
    const usage = chats.map((c) => [c.attributes['gen_ai.usage.input_tokens'], c.attributes['gen_ai.usage.output_tokens']]).sort();
    assert.deepEqual(usage, [[13, 5], [21, 9]]);
    for (const c of chats) {
      assert.equal(c.kind, KIND.client);
      assert.equal(c.attributes['gen_ai.operation.name'], 'chat');
      assert.equal(c.attributes['gen_ai.request.model'], 'gpt-trace');
      assert.equal(c.attributes['gen_ai.provider.name'], 'openai');
      assert.equal(c.attributes['gen_ai.input.messages'], undefined, 'no prompt without the opt-in');
    }

    // Never a secret nor, without the opt-in, a word of the conversation: searched in every byte exported.
    const exported = Buffer.concat(collector.bodies).toString('latin1');
    for (const [what, secret] of Object.entries({ 'API key': h.apiKey, 'llm_api_key': llmKey, 'tool secret': toolToken, 'webhook signing secret': hook.signing_secret, prompt: question, answer })) {
      assert.ok(!exported.includes(secret), `the ${what} was exported`);
    }

    // The web process's access-log line of that request carries the trace id.
    const line = web.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'request' && l.route === '/v1/sessions/{session_id}/events' && l.status === 201);
    assert.equal(line?.trace_id, traceId, 'log line carries trace_id');
    assert.equal(line?.span_id, root.spanId);
  });

  it('a routed call continues its traceparent; with the content opt-in the prompt is on the model-call span, never the keys', async () => {
    const upstreamKey = `sk-up-${hex(12)}`;
    assert.equal((await fetch(`http://127.0.0.1:${web.ports.web}/v1/credentials/FAKE_KEY`, { method: 'PUT', headers: { authorization: `Bearer ${h.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ value: upstreamKey }) })).status, 200);
    assert.equal((await fetch(`http://127.0.0.1:${web.ports.web}/v1/routers/traced`, { method: 'PUT', headers: { authorization: `Bearer ${h.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ candidates: [candidate(fake, 'openai', 'openai/first')] }) })).status, 200);
    fake.reply = { text: 'routed answer', inputTokens: 17, outputTokens: 3 };
    const traceId = hex(16);
    const callerSpan = hex(8);
    const prompt = `capture-${hex(6)}`;
    const res = await fetch(`${routerUrl}/traced/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.routingKey}`, 'content-type': 'application/json', traceparent: `00-${traceId}-${callerSpan}-01` },
      body: JSON.stringify({ model: 'service/routing', messages: [{ role: 'user', content: prompt }] }),
    });
    assert.equal(res.status, 200, await res.text());
    const spans = await until(async () => {
      const t = collector.trace(traceId);
      return t.some((s) => s.kind === KIND.server) && t.some((s) => s.name.startsWith('chat ')) ? t : null;
    }, 10_000);
    const server = spans.find((s) => s.kind === KIND.server)!;
    assert.equal(server.parentSpanId, callerSpan);
    assert.equal(server.roles, 'web+router');
    assert.equal(server.encoding, 'json');
    const chat = spans.find((s) => s.name.startsWith('chat '))!;
    assert.equal(chat.parentSpanId, server.spanId);
    assert.equal(chat.attributes['gen_ai.request.model'], 'up-openai-first');
    assert.equal(chat.attributes['gen_ai.usage.input_tokens'], 17);
    assert.equal(chat.attributes['gen_ai.usage.output_tokens'], 3);
    assert.ok(String(chat.attributes['gen_ai.input.messages']).includes(prompt), 'the opted-in prompt');
    const exported = Buffer.concat(collector.bodies).toString('latin1');
    assert.ok(!exported.includes(h.routingKey), 'the routing key was exported');
    assert.ok(!exported.includes(upstreamKey), 'the upstream key was exported');
  });

  it('a malformed or hostile traceparent is answered as usual and continues nothing; an oversized tracestate is cut to W3C bounds', async () => {
    const auth = { authorization: `Bearer ${h.apiKey}` };
    const api = `http://127.0.0.1:${web.ports.web}/v1/agents`;
    const routerId = `hostile-${hex(4)}`;
    assert.equal((await fetch(`http://127.0.0.1:${web.ports.web}/v1/routers/${routerId}`, { method: 'PUT', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ candidates: [candidate(fake, 'openai', 'openai/hostile')] }) })).status, 200);
    fake.reply = { text: 'ok', inputTokens: 1, outputTokens: 1 };
    const valid = { traceId: hex(16), spanId: hex(8) };
    const cases: HostileTraceCase[] = [
      ...hostileTraceCases(),
      // Last, after every hostile one: the process still serves and still continues a well-formed caller.
      { what: 'a valid traceparent after them', headers: { traceparent: `00-${valid.traceId}-${valid.spanId}-01` }, traceIds: [valid.traceId], continues: valid },
    ];
    // Each case on the API (found by its request id) and on the routing interface (found by a prompt of its own,
    // which the web process's content opt-in puts on the model-call span under the server span).
    const sent: { c: HostileTraceCase; requestId: string; marker: string }[] = [];
    for (const c of cases) {
      const res = await sendWithHeaders(api, { ...auth, ...c.headers });
      assert.equal(res.status, 200, `${c.what}: ${res.body.slice(0, 300)}`);
      const marker = `case-${hex(6)}`;
      const routed = await sendWithHeaders(`${routerUrl}/${routerId}/chat/completions`, { authorization: `Bearer ${h.routingKey}`, ...c.headers }, { model: 'service/routing', messages: [{ role: 'user', content: marker }] });
      assert.equal(routed.status, 200, `${c.what} (routed): ${routed.body.slice(0, 300)}`);
      sent.push({ c, requestId: res.requestId, marker });
    }
    const apiSpan = (requestId: string) => collector.spans.find((s) => s.kind === KIND.server && s.attributes['troupe.request_id'] === requestId);
    const routedSpan = (marker: string) => {
      const chat = collector.spans.find((s) => s.name.startsWith('chat ') && String(s.attributes['gen_ai.input.messages']).includes(marker));
      return chat && collector.spans.find((s) => s.spanId === chat.parentSpanId && s.kind === KIND.server);
    };
    // Bounded: past it, the assertions below name the case whose span is missing.
    await until(async () => sent.every((x) => apiSpan(x.requestId) && routedSpan(x.marker)), 10_000).catch(() => undefined);
    for (const { c, requestId, marker } of sent) {
      for (const [where, span] of [['API', apiSpan(requestId)], ['routing', routedSpan(marker)]] as const) {
        assert.ok(span, `${c.what} (${where}): its server span was exported`);
        if (c.continues) {
          assert.equal(span.traceId, c.continues.traceId, `${c.what} (${where})`);
          assert.equal(span.parentSpanId, c.continues.spanId, `${c.what} (${where})`);
          assert.ok(span.traceState.length <= 512 && span.traceState.split(',').length <= 32, `${c.what} (${where}): tracestate kept within W3C's bounds: ${span.traceState.length} characters`);
        } else {
          assert.equal(span.parentSpanId, '', `${c.what} (${where}): a root span, continuing nothing`);
          assert.ok(!c.traceIds.includes(span.traceId), `${c.what} (${where}): a fresh trace id`);
          assert.equal(span.traceState, '', `${c.what} (${where}): no tracestate taken from an unparsed traceparent`);
        }
      }
      if (!c.continues) for (const t of c.traceIds) assert.deepEqual(collector.trace(t).map((s) => s.name), [], `${c.what}: no span in the trace id it named`);
    }
    // An invalid member (a value past 256 characters) is dropped, the valid one kept; of 1000 members, at most 32.
    const tracestateOf = (what: string) => apiSpan(sent.find((x) => x.c.what === what)!.requestId)!.traceState;
    assert.equal(tracestateOf('a huge tracestate with a valid traceparent'), 'small=1');
    assert.match(tracestateOf('a tracestate of 1000 members'), /^k\d+=v\d+(,k\d+=v\d+){0,31}$/);
    // The web process's access-log lines of the hostile requests name the fresh trace, never one the caller sent.
    const lines = web.lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'request' && sent.some((x) => x.requestId === l.request_id));
    assert.equal(lines.length, sent.length, 'each request was logged');
    for (const { c, requestId } of sent) {
      const line = lines.find((l) => l.request_id === requestId)!;
      assert.equal(line.trace_id, apiSpan(requestId)!.traceId, c.what);
    }
  });
});
