import assert from 'node:assert/strict';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { candidate, converse, messagesRequest, type IngressKind } from '../fakes/llm-conversation.js';
import { startHarness, type Harness } from '../support/harness.js';
import { until } from '../support/wait.js';

const UPSTREAM_KEY = 'sk-fake-upstream-key-123';
const PROVIDERS = ['openai', 'openai-responses', 'anthropic'] as const;
const UPSTREAM_PATH = { openai: '/v1/chat/completions', 'openai-responses': '/v1/responses', anthropic: '/v1/messages' };
const REPLY = { text: 'Checking.', toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: { city: 'Paris', days: 3, opts: { units: 'metric', note: 'say "hi" {ok}' } } }] };

/** Upstream-side evidence that the canned conversation was translated, history and tool included. */
function assertTranslated(provider: (typeof PROVIDERS)[number], body: Record<string, any>): void {
  const text = JSON.stringify(body);
  for (const s of ['You are terse.', 'Weather in Paris?', 'call_0', 'sunny', 'And for 3 days?', 'get_weather']) assert.ok(text.includes(s), `${provider} body carries ${s}`);
  if (provider === 'openai') {
    assert.equal(body.messages.find((m: any) => m.role === 'tool').tool_call_id, 'call_0');
    assert.equal(body.tools[0].function.name, 'get_weather');
  } else if (provider === 'openai-responses') {
    assert.ok(body.input.some((i: any) => i.type === 'function_call_output' && i.call_id === 'call_0'));
    assert.equal(body.tools[0].name, 'get_weather');
  } else {
    assert.ok(body.messages.some((m: any) => m.content.some((b: any) => b.type === 'tool_result' && b.tool_use_id === 'call_0')));
    assert.equal(body.tools[0].input_schema.type, 'object');
  }
}

describe('routing interface', function () {
  let h: Harness;
  let fake: FakeLlmUpstream;
  const put = (id: string, body: unknown) => h.api(`/v1/routers/${id}`, { method: 'PUT', json: body });

  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ roles: ['web', 'router'] });
    assert.equal((await h.api('/v1/credentials/FAKE_KEY', { method: 'PUT', json: { value: UPSTREAM_KEY } })).status, 200);
    for (const p of PROVIDERS) assert.equal((await put(`only-${p}`, { candidates: [candidate(fake, p, `${p}/m`)] })).status, 200);
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });
  beforeEach(() => fake.reset());

  describe('format × provider matrix', () => {
    for (const kind of ['chat', 'responses', 'messages'] as IngressKind[]) {
      for (const provider of PROVIDERS) {
        for (const stream of [false, true]) {
          it(`${kind} → ${provider}${stream ? ', streaming' : ''}: text, tool call and history survive`, async () => {
            fake.reply = REPLY;
            const out = await converse(kind, h.routerUrl, h.routingKey, `only-${provider}`, stream);
            assert.equal(out.text, 'Checking.');
            assert.equal(out.toolCalls.length, 1);
            assert.equal(out.toolCalls[0].name, 'get_weather');
            assert.equal(out.toolCalls[0].id, 'call_1');
            assert.deepEqual(out.toolCalls[0].args, REPLY.toolCalls[0].arguments);
            assert.equal(out.stop, { chat: 'tool_calls', responses: 'completed', messages: 'tool_use' }[kind]);
            assert.equal(out.routing?.selected_model, `${provider}/m`);
            assert.match(String(out.routing?.conversation_id), /^conv_[0-9a-f]{32}$/);
            assert.match(String(out.routing?.reason), /first eligible model|was kept because this conversation started on it/);
            const seen = fake.requests.at(-1)!;
            assert.equal(seen.path, UPSTREAM_PATH[provider]);
            assert.equal(seen.body.model, `up-${provider}-m`);
            assert.equal(seen.body.stream === true, stream);
            if (provider === 'anthropic') assert.equal(seen.headers['x-api-key'], UPSTREAM_KEY);
            else assert.equal(seen.headers.authorization, `Bearer ${UPSTREAM_KEY}`);
            assertTranslated(provider, seen.body);
          });
        }
      }
    }
  });

  describe('auth and validation', () => {
    const post = (path: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) =>
      fetch(h.routerUrl + path, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${h.routingKey}`, ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body), signal });

    it('401s a missing key, the API key and a made-up key', async () => {
      for (const auth of [undefined, `Bearer ${h.apiKey}`, 'Bearer tr_rk_nope_nope_nope_nope']) {
        const res = await fetch(`${h.routerUrl}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) }, body: JSON.stringify(messagesRequest()) });
        assert.equal(res.status, 401, String(auth));
        assert.equal(((await res.json()) as any).error.type, 'authentication_error');
      }
    });

    it('400s a model other than service/routing', async () => {
      const res = await post('/only-openai/chat/completions', { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(res.status, 400);
      assert.equal(((await res.json()) as any).error.param, 'model');
    });

    it('400s a messages body without max_tokens, and an unknown effort level', async () => {
      const { max_tokens: _, ...noMax } = messagesRequest();
      const a = await post('/only-anthropic/messages', noMax);
      assert.equal(a.status, 400);
      assert.equal(((await a.json()) as any).error.param, 'max_tokens');
      const b = await post('/only-openai/chat/completions', { model: 'service/routing', messages: [{ role: 'user', content: 'x' }], reasoning_effort: 'none' });
      assert.equal(b.status, 400);
      assert.equal(((await b.json()) as any).error.param, 'reasoning_effort');
    });

    it('413s a 20 MB body', async () => {
      const big = JSON.stringify(messagesRequest({ messages: [{ role: 'user', content: 'x'.repeat(20 * 1024 * 1024) }] }));
      const res = await post('/only-anthropic/messages', big);
      assert.equal(res.status, 413);
      assert.equal(fake.requests.length, 0);
    });

    it('closes the upstream call when the client hangs up on a non-streamed call, and echoes a request id', async () => {
      fake.delayMs = 3000;
      const gone = new AbortController();
      const pending = post('/only-openai/chat/completions', { model: 'service/routing', messages: [{ role: 'user', content: 'hi' }] }, {}, gone.signal).catch((e: Error) => e);
      await until(async () => fake.requests.length === 1, 5000);
      gone.abort();
      assert.ok((await pending) instanceof Error);
      await until(async () => fake.closedEarly === 1, 2500); // well before the fake's 3 s answer
      fake.delayMs = 0;
      const res = await post('/only-openai/chat/completions', { model: 'service/routing', messages: [{ role: 'user', content: 'hi' }] }, { 'x-request-id': 'req-from-client.1' });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-request-id'), 'req-from-client.1');
      assert.match(res.headers.get('x-conversation-id') ?? '', /^conv_/);
    });

    it('closes the upstream stream when the client hangs up mid-stream, and not after a stream that finished', async () => {
      const body = { model: 'service/routing', messages: [{ role: 'user', content: 'hi' }], stream: true };
      const whole = await post('/only-anthropic/chat/completions', body);
      assert.match(await whole.text(), /\[DONE\]/);
      assert.equal(fake.closedEarly, 0, 'a finished stream leaves its upstream call alone');
      fake.eventDelayMs = 400; // the whole stream would take seconds
      const gone = new AbortController();
      const res = await post('/only-anthropic/chat/completions', body, {}, gone.signal);
      const reader = res.body!.getReader();
      assert.match(new TextDecoder().decode((await reader.read()).value), /data: /);
      gone.abort();
      await until(async () => fake.closedEarly === 1, 1500);
      fake.eventDelayMs = 0;
      assert.equal((await post('/only-anthropic/chat/completions', body)).status, 200);
    });

    it('404s an unknown router and serves /healthz', async () => {
      assert.equal((await post('/nope/chat/completions', { model: 'service/routing', messages: [{ role: 'user', content: 'x' }] })).status, 404);
      assert.equal((await fetch(`${h.routerUrl}/healthz`)).status, 200);
    });
  });
});
