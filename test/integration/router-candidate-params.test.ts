import assert from 'node:assert/strict';
import { ADAPTIVE_ONLY_MODEL, FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { anthropicClient, candidate, openaiClient } from '../fakes/llm-conversation.js';
import { startHarness, type Harness } from '../support/harness.js';

type Json = Record<string, any>;

/**
 * Per-candidate request shaping for models that refuse what older ones take: Claude Opus 4.7 and later answer any
 * temperature, top_p or top_k with a 400, and take thinking only as adaptive thinking with output_config.effort.
 * The fake Anthropic upstream refuses both for ADAPTIVE_ONLY_MODEL, as the real one does.
 */
describe('routing interface: drop_params and thinking_mode of a candidate', function () {
  let h: Harness;
  let fake: FakeLlmUpstream;
  let seq = 0;
  const put = (id: string, body: unknown) => h.api(`/v1/routers/${id}`, { method: 'PUT', json: body });
  const opus = (extra: Json = {}) => candidate(fake, 'anthropic', 'anthropic/opus', { upstream_model: ADAPTIVE_ONLY_MODEL, ...extra });
  const chat = (routerId: string) => openaiClient(h.routerUrl, h.routingKey, routerId, 'chat');
  /** A fresh conversation each time, so stickiness from one test does not leak into the next. */
  const hello = () => [{ role: 'user' as const, content: `hello ${++seq}` }];
  const sent = (i = 0) => fake.requests[i].body as Json;

  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ roles: ['web', 'router'] });
    assert.equal((await h.api('/v1/credentials/FAKE_KEY', { method: 'PUT', json: { value: 'sk-fake' } })).status, 200);
    const routers: Record<string, Json[]> = {
      'opus-plain': [opus({ thinking: true, reasoning_efforts: ['off', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] })],
      'opus-tuned': [opus({ thinking: true, reasoning_efforts: ['off', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'], drop_params: ['temperature', 'top_p', 'top_k'], thinking_mode: 'adaptive' })],
      'opus-then-gpt': [opus({ drop_params: ['temperature', 'top_p'] }), candidate(fake, 'openai', 'openai/gpt')],
    };
    for (const [id, candidates] of Object.entries(routers)) assert.equal((await put(id, { candidates })).status, 200);
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });
  beforeEach(() => fake.reset());

  describe('drop_params', () => {
    it('an OpenAI client’s temperature and top_p fail on a model that refuses them unless the candidate drops them', async () => {
      await assert.rejects(chat('opus-plain').chat.completions.create({ model: 'service/routing', messages: hello(), temperature: 0.7 }), (e: any) => e.status === 400 && e.code === 'upstream_rejected' && /temperature/.test(e.message));
      fake.reset();
      const ok = await chat('opus-tuned').chat.completions.create({ model: 'service/routing', messages: hello(), temperature: 0.7, top_p: 0.9, stop: ['END'] });
      assert.equal(ok.choices[0].message.content, 'Hello from the fake.');
      assert.equal(sent().temperature, undefined);
      assert.equal(sent().top_p, undefined);
      assert.deepEqual(sent().stop_sequences, ['END'], 'a parameter not listed still goes');
    });

    it('streamed, and from a Responses client alike', async () => {
      const s = await chat('opus-tuned').chat.completions.create({ model: 'service/routing', messages: hello(), temperature: 1, stream: true });
      let text = '';
      for await (const c of s) text += c.choices[0]?.delta?.content ?? '';
      assert.equal(text, 'Hello from the fake.');
      const r = await openaiClient(h.routerUrl, h.routingKey, 'opus-tuned', 'responses').responses.create({ model: 'service/routing', input: `hi ${++seq}`, temperature: 0.2, top_p: 0.5 });
      assert.equal(r.output_text, 'Hello from the fake.');
      for (const req of fake.requests) assert.deepEqual([req.body.temperature, req.body.top_p], [undefined, undefined]);
    });

    it('are the candidate’s own: a fallback without them still gets the client’s temperature', async () => {
      fake.failNext(503);
      const r = await chat('opus-then-gpt').chat.completions.create({ model: 'service/routing', messages: hello(), temperature: 0.3 });
      assert.equal((r as any).service_routing.selected_model, 'openai/gpt');
      assert.equal(fake.requests.length, 2);
      assert.equal(sent(0).temperature, undefined);
      assert.equal(sent(1).temperature, 0.3);
    });
  });

  describe('thinking_mode adaptive', () => {
    it('a chat reasoning_effort fails as a thinking budget on such a model, and goes as adaptive thinking with output_config.effort when the candidate says so', async () => {
      await assert.rejects(chat('opus-plain').chat.completions.create({ model: 'service/routing', messages: hello(), reasoning_effort: 'high' }), (e: any) => e.status === 400 && e.code === 'upstream_rejected' && /thinking/.test(e.message));
      fake.reset();
      const r = await chat('opus-tuned').chat.completions.create({ model: 'service/routing', messages: hello(), reasoning_effort: 'high', max_completion_tokens: 500 });
      assert.equal(r.choices[0].message.content, 'Hello from the fake.');
      assert.deepEqual(sent().thinking, { type: 'adaptive' });
      assert.deepEqual(sent().output_config, { effort: 'high' });
      assert.equal(sent().max_tokens, 500);
    });

    it('maps every level: minimal as low, xhigh and max as such, off as no thinking at all', async () => {
      const expect: Record<string, string | undefined> = { minimal: 'low', low: 'low', medium: 'medium', xhigh: 'xhigh', max: 'max', off: undefined };
      for (const level of Object.keys(expect)) await chat('opus-tuned').chat.completions.create({ model: 'service/routing', messages: hello(), reasoning_effort: level as any });
      assert.deepEqual(
        fake.requests.map((r) => [(r.body as Json).thinking?.type, (r.body as Json).output_config?.effort]),
        Object.values(expect).map((e) => (e ? ['adaptive', e] : [undefined, undefined])),
      );
    });

    it('a messages budget becomes adaptive thinking, and the effort sits beside a structured-output format', async () => {
      const m = await anthropicClient(h.routerUrl, h.routingKey, 'opus-tuned').messages.create({ model: 'service/routing', max_tokens: 4000, messages: hello(), thinking: { type: 'enabled', budget_tokens: 2048 } });
      assert.equal(m.stop_reason, 'end_turn');
      assert.deepEqual(sent().thinking, { type: 'adaptive' });
      fake.reset();
      const schema = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false };
      fake.reply = { text: '{"a":"x"}' };
      await openaiClient(h.routerUrl, h.routingKey, 'opus-tuned', 'responses').responses.create({ model: 'service/routing', input: `hi ${++seq}`, reasoning: { effort: 'medium' }, text: { format: { type: 'json_schema', name: 'a', schema, strict: true } } });
      assert.deepEqual(sent().output_config, { format: { type: 'json_schema', schema }, effort: 'medium' });
    });
  });

  describe('configuration', () => {
    it('GET shows both settings; a router without them shows neither and its candidates behave as before', async () => {
      const tuned = (await (await h.api('/v1/routers/opus-tuned')).json()) as Json;
      assert.deepEqual(tuned.candidates[0].drop_params, ['temperature', 'top_p', 'top_k']);
      assert.equal(tuned.candidates[0].thinking_mode, 'adaptive');
      const plain = (await (await h.api('/v1/routers/opus-plain')).json()) as Json;
      assert.ok(!('drop_params' in plain.candidates[0]) && !('thinking_mode' in plain.candidates[0]));
      // The fake refuses the budget for this model; what matters here is that it was sent as before.
      await chat('opus-plain').chat.completions.create({ model: 'service/routing', messages: hello(), reasoning_effort: 'high', temperature: 0.5 }).catch(() => undefined);
      assert.deepEqual(sent().thinking, { type: 'enabled', budget_tokens: 4095 }, 'high as a budget, capped below the default max_tokens of 4096');
      assert.equal(sent().output_config, undefined);
    });

    it('an unknown parameter name, a repeated one or a thinking_mode off anthropic is a 400 naming the field', async () => {
      const cases: [Json, string][] = [
        [opus({ drop_params: ['temperature', 'frequency_penalty'] }), 'candidates[0].drop_params[1]'],
        [opus({ drop_params: ['top_p', 'top_p'] }), 'candidates[0].drop_params'],
        [opus({ drop_params: 'temperature' }), 'candidates[0].drop_params'],
        [opus({ thinking_mode: 'always' }), 'candidates[0].thinking_mode'],
        [candidate(fake, 'openai', 'openai/gpt', { thinking_mode: 'adaptive' }), 'candidates[0].thinking_mode'],
      ];
      for (const [c, param] of cases) {
        const res = await put('bad-params', { candidates: [c] });
        const body = (await res.json()) as Json;
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.equal(body.error.param, param, JSON.stringify(body));
      }
      assert.equal((await h.api('/v1/routers/bad-params')).status, 404);
    });
  });
});
