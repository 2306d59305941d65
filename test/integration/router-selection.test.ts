import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { candidate, chatRequest, responsesRequest } from '../fakes/llm-conversation.js';
import { startHarness, type Harness } from '../support/harness.js';

type Json = Record<string, any>;

describe('routing interface: routers, selection and fallback', function () {
  let h: Harness;
  let fake: FakeLlmUpstream;
  let seq = 0;
  const put = (id: string, body: unknown) => h.api(`/v1/routers/${id}`, { method: 'PUT', json: body });
  const post = async (path: string, body: unknown): Promise<{ status: number; json: Json }> => {
    const res = await fetch(h.routerUrl + path, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${h.routingKey}` }, body: JSON.stringify(body) });
    return { status: res.status, json: (await res.json()) as Json };
  };
  const sse = async (path: string, body: unknown): Promise<{ status: number; events: Json[]; text: string }> => {
    const res = await fetch(h.routerUrl + path, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${h.routingKey}` }, body: JSON.stringify({ ...(body as Json), stream: true }) });
    const text = await res.text();
    const events = text.split('\n').filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]').map((l) => JSON.parse(l.slice(6)));
    return { status: res.status, events, text };
  };
  /** A fresh conversation each time, so stickiness from one test does not leak into the next. */
  const fresh = (extra: Json = {}) => chatRequest({ messages: [{ role: 'user', content: `hello ${++seq} ${Date.now()}` }], tools: undefined, ...extra });

  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ roles: ['web', 'router'] });
    await h.api('/v1/credentials/FAKE_KEY', { method: 'PUT', json: { value: 'sk-fake' } });
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });
  beforeEach(() => fake.reset());

  it('creates, lists, reads and deletes routers, with one default per org', async () => {
    const a = await put('ra', { default: true, candidates: [candidate(fake, 'openai', 'a/one')] });
    assert.equal(a.status, 200);
    const body = (await a.json()) as Json;
    assert.equal(body.policy, 'priority');
    assert.equal(body.candidates[0].tools, true, 'defaults are filled in');
    assert.equal((await put('rb', { default: true, candidates: [candidate(fake, 'anthropic', 'b/one')] })).status, 200);
    const list = (await (await h.api('/v1/routers')).json()) as Json;
    const byId = Object.fromEntries(list.routers.map((r: Json) => [r.router_id, r.default]));
    assert.deepEqual([byId.ra, byId.rb], [false, true]);
    const r = await post('/v1/chat/completions', fresh());
    assert.equal(r.json.service_routing.selected_model, 'b/one', '/v1 paths use the default router');
    assert.equal((await h.api('/v1/routers/ra', { method: 'DELETE' })).status, 204);
    assert.equal((await h.api('/v1/routers/ra')).status, 404);
    assert.equal((await h.api('/v1/routers/ra', { method: 'DELETE' })).status, 404);
  });

  it('rejects bad router definitions', async () => {
    const cases: [string, Json, string][] = [
      ['bad', { candidates: [] }, 'candidates'],
      ['bad', { candidates: [candidate(fake, 'openai', 'x', { provider: 'bedrock' })] }, 'candidates[0].provider'],
      ['bad', { candidates: [candidate(fake, 'openai', 'x', { api_key_credential: 'MISSING' })] }, 'candidates[0].api_key_credential'],
      ['bad', { candidates: [candidate(fake, 'openai', 'x', { reasoning_efforts: ['turbo'] })] }, 'candidates[0].reasoning_efforts[0]'],
      ['v1', { candidates: [candidate(fake, 'openai', 'x')] }, 'router_id'],
    ];
    for (const [id, body, param] of cases) {
      const res = await put(id, body);
      assert.equal(res.status, 400, param);
      assert.equal(((await res.json()) as Json).error.param, param);
    }
  });

  it('skips models that lack the effort level, tools or context, and says why', async () => {
    await put('elig', {
      candidates: [
        candidate(fake, 'openai', 'small', { context_window: 50 }),
        candidate(fake, 'openai', 'no-tools', { tools: false }),
        candidate(fake, 'anthropic', 'low-only', { reasoning_efforts: ['off', 'low'] }),
        candidate(fake, 'openai-responses', 'deep', { reasoning_efforts: ['high', 'xhigh'] }),
      ],
    });
    const long = fresh({ messages: [{ role: 'user', content: 'x'.repeat(400) }] });
    assert.equal((await post('/elig/chat/completions', long)).json.service_routing.selected_model, 'no-tools');
    const withTools = chatRequest({ messages: [{ role: 'user', content: `tools ${++seq}` }] });
    const t = await post('/elig/chat/completions', withTools);
    assert.equal(t.json.service_routing.selected_model, 'small');
    const x = await post('/elig/chat/completions', fresh({ reasoning_effort: 'xhigh' }));
    assert.equal(x.json.service_routing.selected_model, 'deep');
    assert.equal(x.json.service_routing.reasoning_effort, 'xhigh');
    assert.match(x.json.service_routing.reason, /low-only does not support reasoning effort xhigh/);
    assert.deepEqual(fake.requests.at(-1)!.body.reasoning, { effort: 'xhigh' });
    const none = await post('/elig/v1/responses', responsesRequest({ input: `effort ${++seq}`, tools: undefined, reasoning: { effort: 'none' } }));
    assert.equal(none.json.service_routing.selected_model, 'small');
    assert.equal(none.json.service_routing.reasoning_effort, 'none');
    assert.equal(fake.requests.at(-1)!.body.reasoning_effort, 'none', 'off runs as none on openai chat');
    const max = await post('/elig/chat/completions', fresh({ reasoning_effort: 'max' }));
    assert.equal(max.status, 400);
    assert.equal(max.json.error.code, 'no_eligible_model');
    assert.match(max.json.error.message, /supports reasoning effort max/);
  });

  it('picks the cheapest eligible model under the cheapest policy', async () => {
    await put('cheap', { policy: 'cheapest', candidates: [candidate(fake, 'openai', 'pricey', { input_price: 5, output_price: 15 }), candidate(fake, 'anthropic', 'thrifty', { input_price: 0.1, output_price: 0.4 })] });
    const r = await post('/cheap/chat/completions', fresh());
    assert.equal(r.json.service_routing.selected_model, 'thrifty');
    assert.match(r.json.service_routing.reason, /cheapest eligible model/);
  });

  it('keeps a conversation on its model while it stays eligible', async () => {
    await put('sticky', { policy: 'cheapest', candidates: [candidate(fake, 'openai', 's-a', { input_price: 1 }), candidate(fake, 'anthropic', 's-b', { input_price: 2, reasoning_efforts: ['off', 'low', 'medium', 'high', 'max'] })] });
    const opening = [{ role: 'system', content: 'sticky test' }, { role: 'user', content: `first ${++seq}` }];
    const t1 = await post('/sticky/chat/completions', fresh({ messages: opening, reasoning_effort: 'max' }));
    assert.equal(t1.json.service_routing.selected_model, 's-b');
    const more = [...opening, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'next' }];
    const t2 = await post('/sticky/chat/completions', fresh({ messages: more }));
    assert.equal(t2.json.service_routing.selected_model, 's-b', 'cheaper s-a is not taken mid-conversation');
    assert.equal(t2.json.service_routing.conversation_id, t1.json.service_routing.conversation_id);
    assert.match(t2.json.service_routing.reason, /was kept/);
    await put('sticky', { policy: 'cheapest', candidates: [candidate(fake, 'openai', 's-a', { input_price: 1 }), candidate(fake, 'anthropic', 's-b', { input_price: 2, tools: false })] });
    await new Promise((r) => setTimeout(r, 1100)); // the router caches its config for a second
    const t3 = await post('/sticky/chat/completions', fresh({ messages: more, tools: chatRequest().tools }));
    assert.equal(t3.json.service_routing.selected_model, 's-a', 'moves once the model is no longer eligible');
    assert.match(t3.json.service_routing.reason, /no longer eligible/);
  });

  it('applies configuration_update: latest effort routes, request-level effort is fixed, updates are stripped', async () => {
    await put('cu', { candidates: [candidate(fake, 'openai', 'cu-low', { reasoning_efforts: ['low'] }), candidate(fake, 'anthropic', 'cu-high', { reasoning_efforts: ['low', 'high'], thinking: true })] });
    const input = (updates: string[]) => [{ role: 'user', content: `cu ${seq}` }, ...updates.map((e) => ({ type: 'configuration_update', reasoning: { effort: e } })), { role: 'user', content: 'go' }];
    seq++;
    const noLevel = await post('/cu/v1/responses', { model: 'service/routing', input: input(['high']) });
    assert.equal(noLevel.status, 400);
    assert.equal(noLevel.json.error.param, 'reasoning.effort');
    const t1 = await post('/cu/v1/responses', { model: 'service/routing', input: input(['high']), reasoning: { effort: 'low' } });
    assert.equal(t1.status, 200, JSON.stringify(t1.json));
    assert.equal(t1.json.service_routing.selected_model, 'cu-high');
    assert.equal(t1.json.service_routing.reasoning_effort, 'high');
    const seen = fake.requests.at(-1)!.body as Json;
    assert.ok(!JSON.stringify(seen).includes('configuration_update'), 'never forwarded to a provider that does not understand it');
    assert.equal(seen.thinking.type, 'enabled', 'high effort runs as extended thinking on anthropic');
    const changed = await post('/cu/v1/responses', { model: 'service/routing', input: input(['high', 'low']), reasoning: { effort: 'medium' } });
    assert.equal(changed.status, 400);
    assert.equal(changed.json.error.code, 'effort_changed');
    const t2 = await post('/cu/v1/responses', { model: 'service/routing', input: input(['high', 'low']), reasoning: { effort: 'low' } });
    assert.equal(t2.json.service_routing.reasoning_effort, 'low', 'the latest update wins');
  });

  it('forwards configuration_update to a model that declares it understands them', async () => {
    await put('cu-fwd', { candidates: [candidate(fake, 'openai-responses', 'cu-native', { configuration_update: true })] });
    const r = await post('/cu-fwd/v1/responses', { model: 'service/routing', input: [{ role: 'user', content: `fwd ${++seq}` }, { type: 'configuration_update', reasoning: { effort: 'high' } }], reasoning: { effort: 'low' } });
    assert.equal(r.status, 200);
    const seen = fake.requests.at(-1)!.body as Json;
    assert.deepEqual(seen.input[1], { type: 'configuration_update', reasoning: { effort: 'high' } });
    assert.deepEqual(seen.reasoning, { effort: 'low' });
  });

  it('falls back to the next candidate on 429/5xx, before the first byte of a stream too', async () => {
    await put('fb', { candidates: [candidate(fake, 'openai', 'fb-1'), candidate(fake, 'anthropic', 'fb-2')] });
    fake.failNext(503);
    const r = await post('/fb/chat/completions', fresh());
    assert.equal(r.status, 200);
    assert.equal(r.json.service_routing.selected_model, 'fb-2');
    assert.match(r.json.service_routing.reason, /Fell back to fb-2/);
    fake.failNext(429);
    const s = await sse('/fb/v1/responses', responsesRequest({ input: `fb ${++seq}`, tools: undefined }));
    assert.equal(s.status, 200);
    const done = s.events.at(-1)!;
    assert.equal(done.type, 'response.completed');
    assert.equal(done.response.service_routing.selected_model, 'fb-2');
    fake.failNext(500, 2);
    const all = await post('/fb/chat/completions', fresh());
    assert.equal(all.status, 502);
    assert.match(all.json.error.message, /fb-1.*fb-2/s);
    fake.failNext(400);
    assert.equal((await post('/fb/chat/completions', fresh())).status, 400, 'a 4xx from upstream is not retried');
  });

  it('ends a stream that breaks mid-way with the format\u2019s error event', async () => {
    await put('cut', { candidates: [candidate(fake, 'anthropic', 'cut-1'), candidate(fake, 'openai', 'cut-2')] });
    fake.reply = { text: 'a long answer that will be cut' };
    fake.cutStreamAfter = 5;
    const s = await sse('/cut/messages', { model: 'service/routing', max_tokens: 50, messages: [{ role: 'user', content: `cut ${++seq}` }] });
    assert.equal(s.status, 200);
    assert.equal(s.events.at(-1)!.type, 'error');
    assert.ok(s.events.some((e) => e.type === 'content_block_delta'), 'content was streamed before the cut');
    const chat = await sse('/cut/chat/completions', fresh());
    assert.ok(chat.events.at(-1)!.error, 'chat streams end with an error chunk');
    assert.ok(chat.text.endsWith('data: [DONE]\n\n'));
  });

  it('records token usage per org, router and model', async () => {
    await put('usage', { candidates: [candidate(fake, 'openai', 'u-1')] });
    fake.reply = { text: 'counted', inputTokens: 100, outputTokens: 40 };
    await post('/usage/chat/completions', fresh());
    await sse('/usage/chat/completions', fresh());
    await new Promise((r) => setTimeout(r, 1300)); // usage is written once a second
    const mongo = new MongoClient(h.env.MONGODB_URL, { directConnection: true });
    try {
      const docs = await mongo.db(h.env.TROUPE_MONGODB_DB).collection('usage').find({ router_id: 'usage' }).toArray();
      assert.equal(docs.length, 1);
      assert.equal(docs[0].model, 'u-1');
      assert.deepEqual([docs[0].requests, docs[0].input_tokens, docs[0].output_tokens], [2, 200, 80]);
    } finally {
      await mongo.close();
    }
  });
});
