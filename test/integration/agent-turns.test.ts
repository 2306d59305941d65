import assert from 'node:assert/strict';
import type { ToolDef } from '../../src/domain/agent.js';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { agentWith } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { until } from '../support/wait.js';
import type { LedgerEvent } from '../support/wire.js';

type Ev = LedgerEvent;

const lookupTool: ToolDef = {
  name: 'lookup',
  kind: 'external',
  path: 'tools/lookup.json',
  timeout_seconds: 30,
  description: 'Look a thing up.',
  input_schema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
  output_schema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'], additionalProperties: false },
};

describe('agent turns: providers and the tool loop', function () {
  this.timeout(60_000);
  let h: Harness;
  let fake: FakeLlmUpstream;
  const text = (t: string) => [{ type: 'text', text: t }];

  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ env: { TROUPE_SESSION_SHARDS: '4' } });
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });
  beforeEach(() => fake.reset());

  async function events(sessionId: string): Promise<Ev[]> {
    return ((await (await h.api(`/v1/sessions/${sessionId}/events?limit=100`)).json()) as { events: Ev[] }).events;
  }

  async function send(sessionId: string, t: string): Promise<string> {
    const res = await h.api(`/v1/sessions/${sessionId}/events`, { method: 'POST', json: { type: 'user.message', content: text(t) } });
    assert.equal(res.status, 201);
    return ((await res.json()) as { message: { id: string } }).message.id;
  }

  async function message(sessionId: string, id: string): Promise<{ status: string; attempt: number; output: { parts: Record<string, unknown>[] }; error: string | null }> {
    return (await (await h.api(`/v1/sessions/${sessionId}/messages/${id}`)).json()) as never;
  }

  async function session(agentId: string, body: unknown = {}): Promise<string> {
    const res = await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: body });
    assert.equal(res.status, 201);
    return ((await res.json()) as { id: string }).id;
  }

  it('runs an external tool: requested, a bad result is 422, a good one completes the message', async () => {
    const { agentId } = await agentWith(h, {
      tools: [lookupTool],
      llm_options: [{ id: 'main', provider: 'scripted', script: 's.json' }],
      scripts: { main: { turns: [{ tool_calls: [{ name: 'lookup', arguments: { q: 'weather' }, id: 'call_1' }] }, { text: 'It is sunny.' }] } },
    });
    const sid = await session(agentId);
    const mid = await send(sid, 'weather?');
    const requested = await until(async () => (await events(sid)).find((e) => e.type === 'tool.call_requested'));
    assert.equal(requested.data.id, `${sid}:${mid}:call_1`);
    assert.equal(requested.data.tool_name, 'lookup');
    assert.deepEqual(requested.data.arguments, { q: 'weather' });
    assert.deepEqual(requested.data.output_schema, lookupTool.output_schema);
    assert.match(String(requested.data.submit_url), new RegExp(`/v1/sessions/${sid}/events$`));
    assert.ok(Date.parse(String(requested.data.expires_at)) > Date.now() + 20_000);
    await until(async () => (await message(sid, mid)).status === 'requires_action');
    const pending = (await (await h.api(`/v1/sessions/${sid}/tool-calls?status=pending`)).json()) as { tool_calls: { tool_call_id: string; kind: string; arguments: unknown; input_schema: unknown; output_schema: unknown }[] };
    assert.deepEqual(pending.tool_calls.map((c) => [c.tool_call_id, c.kind]), [['call_1', 'external']]);
    assert.deepEqual(pending.tool_calls[0].arguments, { q: 'weather' });
    assert.deepEqual(pending.tool_calls[0].input_schema, lookupTool.input_schema, 'the list carries the schemas the event carries');
    assert.deepEqual(pending.tool_calls[0].output_schema, lookupTool.output_schema);
    const before = (await events(sid)).length;
    const bad = await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'tool.result_submitted', message_id: mid, tool_call_id: 'call_1', result: { answer: 42 } } });
    assert.equal(bad.status, 422);
    assert.equal(((await bad.json()) as { error: { code: string } }).error.code, 'tool_result_invalid');
    assert.equal((await events(sid)).length, before, 'nothing appended for a bad result');
    const submit = () => h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'tool.result_submitted', message_id: mid, tool_call_id: 'call_1', result: { answer: 'sunny' } }, headers: { 'Idempotency-Key': 'r1' } });
    const good = await submit();
    const goodText = await good.text();
    assert.equal(good.status, 201, goodText);
    assert.equal(JSON.parse(goodText).event.type, 'tool.result_submitted');
    const replay = await submit();
    assert.equal(await replay.text(), goodText, 'an Idempotency-Key replay returns the original');
    const second = await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'tool.result_submitted', message_id: mid, tool_call_id: 'call_1', result: { answer: 'again' } } });
    assert.equal(second.status, 409);
    await second.text();
    const done = await until(async () => {
      const m = await message(sid, mid);
      return m.status === 'completed' ? m : undefined;
    });
    assert.deepEqual(done.output.parts.map((p) => p.type), ['tool_call', 'tool_result', 'text']);
    assert.deepEqual(done.output.parts[1], { type: 'tool_result', tool_call_id: 'call_1', tool_name: 'lookup', content: [{ type: 'text', text: '{"answer":"sunny"}' }], is_error: false });
  });

  it('fails an external tool call at its deadline and lets the model answer', async () => {
    const { agentId } = await agentWith(h, {
      tools: [{ ...lookupTool, timeout_seconds: 1 }],
      llm_options: [{ id: 'main', provider: 'scripted', script: 's.json' }],
      scripts: { main: { turns: [{ tool_calls: [{ name: 'lookup', arguments: { q: 'x' }, id: 'call_t' }] }, { text: 'No answer in time.' }] } },
    });
    const sid = await session(agentId);
    const mid = await send(sid, 'go');
    const done = await until(async () => {
      const m = await message(sid, mid);
      return m.status === 'completed' ? m : undefined;
    });
    const failed = (await events(sid)).find((e) => e.type === 'tool.call_failed')!;
    assert.equal(failed.data.reason, 'timeout');
    assert.equal(failed.data.tool_call_id, 'call_t');
    assert.equal(done.output.parts[1].is_error, true);
  });

  it('calls an openai-format model with the session llm_api_key and never returns the key', async () => {
    const key = `sk-canary-${Date.now()}`;
    const { agentId } = await agentWith(h, { llm_options: [{ id: 'main', provider: 'openai', model: 'gpt-test', base_url: fake.openaiBase }] });
    fake.reply = { text: 'Hi from OpenAI fake.' };
    const res = await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: { llm_api_key: key } });
    const body = await res.text();
    assert.ok(!body.includes(key));
    const sid = JSON.parse(body).id as string;
    const sync = await h.api(`/v1/sessions/${sid}/messages/sync`, { method: 'POST', json: { parts: text('hello') } });
    const syncText = await sync.text();
    assert.equal(sync.status, 200, syncText);
    assert.equal(JSON.parse(syncText).output.parts[0].text, 'Hi from OpenAI fake.');
    assert.equal(fake.requests.length, 1);
    assert.equal(fake.requests[0].headers.authorization, `Bearer ${key}`);
    assert.equal(fake.requests[0].body.model, 'gpt-test');
    for (const path of [`/v1/sessions/${sid}`, `/v1/sessions/${sid}/events?limit=100`, `/v1/sessions/${sid}/messages`, `/v1/sessions/${sid}/transcript`]) {
      assert.ok(!(await (await h.api(path)).text()).includes(key), path);
    }
    assert.ok(!h.logs().includes(key), 'the key is never logged');
  });

  it('uses a stored credential, overridden by a session secret of the same name', async () => {
    await h.api('/v1/credentials/ANTHROPIC_KEY', { method: 'PUT', json: { value: 'stored-key' } });
    const { agentId } = await agentWith(h, { llm_options: [{ id: 'main', provider: 'anthropic', model: 'claude-test', base_url: fake.anthropicBase, api_key_credential: 'ANTHROPIC_KEY' }], secrets: ['ANTHROPIC_KEY'] });
    const plain = await session(agentId);
    await h.api(`/v1/sessions/${plain}/messages/sync`, { method: 'POST', json: { parts: text('a') } }).then((r) => r.text());
    const overridden = await session(agentId, { secrets: { ANTHROPIC_KEY: 'session-key' } });
    await h.api(`/v1/sessions/${overridden}/messages/sync`, { method: 'POST', json: { parts: text('b') } }).then((r) => r.text());
    assert.deepEqual(fake.requests.map((r) => r.headers['x-api-key']), ['stored-key', 'session-key']);
  });

  it('retries a 429 with attempt counting, and fails after the limit', async () => {
    const { agentId } = await agentWith(h, { llm_options: [{ id: 'main', provider: 'openai', model: 'gpt-test', base_url: fake.openaiBase }] });
    const sid = await session(agentId, { llm_api_key: 'k' });
    fake.failNext(429, 1, '2');
    const ok = await h.api(`/v1/sessions/${sid}/messages/sync`, { method: 'POST', json: { parts: text('once') } });
    const okBody = (await ok.json()) as { status: string; attempt: number };
    assert.equal(okBody.status, 'completed');
    assert.equal(okBody.attempt, 2);
    const retried = (await events(sid)).find((e) => e.type === 'message.status_changed' && e.data.from === 'running' && e.data.to === 'running')!;
    assert.equal(retried.data.retry_in_ms, 2000, 'Retry-After outweighs the 1 s backoff');
    fake.failNext(503, 5);
    const failed = await h.api(`/v1/sessions/${sid}/messages/sync`, { method: 'POST', json: { parts: text('never') } });
    const failedText = await failed.text();
    const failedBody = JSON.parse(failedText) as { status: string; attempt: number; error: string };
    assert.equal(failed.status, 200, failedText);
    assert.equal(failedBody.status, 'failed');
    assert.equal(failedBody.attempt, 3);
    assert.match(failedBody.error, /503/);
    const evs = await events(sid);
    const statuses = evs.filter((e) => e.type === 'message.status_changed');
    assert.deepEqual(statuses.slice(-3).map((e) => [e.data.to, e.data.attempt]), [['running', 2], ['running', 3], ['failed', 3]]);
    const last = statuses.at(-1)!;
    assert.equal(last.data.to, 'failed');
    assert.match(String(last.data.error), /gave up after 3 attempts/);
  });

  it('streams live token deltas to SSE clients that ask for them, and keeps them out of the ledger', async () => {
    const { agentId } = await agentWith(h, { llm_options: [{ id: 'main', provider: 'openai-responses', model: 'gpt-test', base_url: fake.openaiBase }] });
    fake.reply = { text: 'Streaming words arrive in pieces.' };
    fake.firstEventDelayMs = 300;
    const sid = await session(agentId, { llm_api_key: 'k' });
    const res = await h.api(`/v1/sessions/${sid}/stream?deltas=true`);
    const reader = res.body!.getReader();
    let raw = '';
    const reading = (async () => {
      const dec = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        raw += dec.decode(value, { stream: true });
        if (raw.includes('event: session.status_changed') && raw.includes('"to":"idle"')) return;
      }
    })();
    await send(sid, 'stream please');
    await Promise.race([reading, new Promise((_, reject) => setTimeout(() => reject(new Error(`no idle seen: ${raw}`)), 15_000))]);
    await reader.cancel();
    const deltas = raw.split('\n\n').filter((b) => b.startsWith('event: assistant.delta'));
    assert.ok(deltas.length > 1, `deltas arrive in pieces: ${raw}`);
    assert.ok(deltas.every((b) => !/^id: /m.test(b)), 'deltas carry no id');
    const joined = deltas.map((b) => JSON.parse(b.split('data: ')[1]).text).join('');
    assert.equal(joined, 'Streaming words arrive in pieces.');
    assert.ok(!(await events(sid)).some((e) => e.type === ('assistant.delta' as string)), 'never in the ledger');
  });

  it('runs the model loop with tool calls from a real provider format', async () => {
    const { agentId } = await agentWith(h, { tools: [lookupTool], llm_options: [{ id: 'main', provider: 'anthropic', model: 'claude-test', base_url: fake.anthropicBase }] });
    let calls = 0;
    fake.reply = () => (calls++ === 0 ? { toolCalls: [{ id: 'toolu_1', name: 'lookup', arguments: { q: 'paris' } }] } : { text: 'Paris is sunny.' });
    const sid = await session(agentId, { llm_api_key: 'k' });
    const mid = await send(sid, 'paris?');
    await until(async () => (await message(sid, mid)).status === 'requires_action');
    const res = await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'tool.result_submitted', message_id: mid, tool_call_id: 'toolu_1', result: { answer: 'sunny' } } });
    assert.equal(res.status, 201);
    await res.text();
    const done = await until(async () => {
      const m = await message(sid, mid);
      return m.status === 'completed' ? m : undefined;
    });
    assert.equal(done.output.parts.at(-1)!.text, 'Paris is sunny.');
    const second = fake.requests[1].body as { messages: { role: string; content: unknown }[] };
    const toolResult = JSON.stringify(second.messages);
    assert.match(toolResult, /tool_result/);
    assert.match(toolResult, /sunny/);
  });

  it('routes a turn through the org router in-process (provider routing)', async () => {
    await h.api('/v1/credentials/ROUTED_KEY', { method: 'PUT', json: { value: 'routed-upstream-key' } });
    const put = await h.api('/v1/routers/agents', {
      method: 'PUT',
      json: { default: false, policy: 'priority', candidates: [{ model: 'fake/gpt', provider: 'openai', upstream_model: 'gpt-routed', base_url: fake.openaiBase, api_key_credential: 'ROUTED_KEY', tools: true, context_window: 128000 }] },
    });
    assert.ok(put.status === 200 || put.status === 201, await put.text());
    const { agentId } = await agentWith(h, { llm_options: [{ id: 'main', provider: 'routing', router_id: 'agents' }] });
    fake.reply = { text: 'Routed answer.' };
    const sid = await session(agentId);
    const res = await h.api(`/v1/sessions/${sid}/messages/sync`, { method: 'POST', json: { parts: text('route me') } });
    const m = (await res.json()) as { status: string; output: { parts: { text: string }[] } };
    assert.equal(m.status, 'completed', JSON.stringify(m));
    assert.equal(m.output.parts[0].text, 'Routed answer.');
    assert.equal(fake.requests.length, 1);
    assert.equal(fake.requests[0].body.model, 'gpt-routed');
    assert.equal(fake.requests[0].headers.authorization, 'Bearer routed-upstream-key');
  });

  it('stops the loop at max_turns', async () => {
    const { agentId } = await agentWith(h, {
      tools: [{ ...lookupTool, name: 'noop', kind: 'external' }],
      llm_options: [{ id: 'main', provider: 'scripted', script: 's.json' }],
      scripts: { main: { turns: [{ tool_calls: [{ name: 'missing_tool', arguments: {} }] }] } },
    });
    const sid = await session(agentId);
    const mid = await send(sid, 'loop');
    const m = await until(async () => {
      const x = await message(sid, mid);
      return x.status === 'failed' ? x : undefined;
    });
    assert.match(String(m.error), /max_turns \(10\)/);
    assert.equal((await events(sid)).filter((e) => e.type === 'tool.call_failed').length, 9);
  });
});
