import assert from 'node:assert/strict';
import type Anthropic from '@anthropic-ai/sdk';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { anthropicClient, candidate, openaiClient } from '../fakes/llm-conversation.js';
import { startHarness, type Harness } from '../support/harness.js';
import { json, until } from '../support/wait.js';

type Json = Record<string, any>;

/**
 * Prompt caching through the router: Anthropic cache_control breakpoints reach an anthropic candidate where the client
 * put them (and no OpenAI candidate, which caches by itself), and the cached-token counts each vendor reports come
 * back in the client format's own fields, with the totals converted (Anthropic's input_tokens leaves cached tokens
 * out, OpenAI's prompt and input tokens count them).
 */
describe('routing interface: prompt caching', function () {
  let h: Harness;
  let fake: FakeLlmUpstream;
  let seq = 0;
  const put = (id: string, body: unknown) => h.api(`/v1/routers/${id}`, { method: 'PUT', json: body });
  const sent = (i = 0) => fake.requests[i].body as Json;
  const ephemeral = { type: 'ephemeral' as const };
  const hour = { type: 'ephemeral' as const, ttl: '1h' as const };

  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ roles: ['web', 'router'] });
    assert.equal((await h.api('/v1/credentials/FAKE_KEY', { method: 'PUT', json: { value: 'sk-fake' } })).status, 200);
    const routers: Record<string, Json[]> = {
      claude: [candidate(fake, 'anthropic', 'anthropic/claude')],
      gpt: [candidate(fake, 'openai', 'openai/gpt')],
      'gpt-responses': [candidate(fake, 'openai-responses', 'openai/gpt-responses')],
      // Models of their own, so the usage test counts only its own calls.
      'claude-billed': [candidate(fake, 'anthropic', 'anthropic/claude-billed')],
      'gpt-billed': [candidate(fake, 'openai', 'openai/gpt-billed')],
    };
    for (const [id, candidates] of Object.entries(routers)) assert.equal((await put(id, { candidates })).status, 200);
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });
  beforeEach(() => fake.reset());

  /** A tool-using conversation with a breakpoint on every kind of block that takes one, and the top-level one. */
  function cachedRequest(): Anthropic.MessageCreateParamsNonStreaming {
    return {
      model: 'service/routing',
      max_tokens: 256,
      cache_control: ephemeral,
      system: [
        { type: 'text', text: `You are a weather bot ${++seq}.`, cache_control: hour },
        { type: 'text', text: 'Today is Saturday.' },
      ],
      tools: [
        { name: 'get_time', input_schema: { type: 'object', properties: {} } },
        { name: 'get_weather', description: 'Weather of a city', input_schema: { type: 'object', properties: { city: { type: 'string' } } }, cache_control: ephemeral },
      ],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'A long document...', cache_control: ephemeral }, { type: 'text', text: 'Weather in Paris?' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' }, cache_control: ephemeral }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'Sunny', cache_control: hour }], cache_control: ephemeral }] },
      ],
    };
  }

  describe('cache_control', () => {
    it('reaches an anthropic candidate on the same system blocks, content blocks, tool calls and results, tools and request', async () => {
      const msg = await anthropicClient(h.routerUrl, h.routingKey, 'claude').messages.create(cachedRequest());
      assert.equal((msg.content[0] as Anthropic.TextBlock).text, 'Hello from the fake.');
      const body = sent();
      assert.deepEqual(body.cache_control, ephemeral);
      assert.deepEqual(body.system, [
        { type: 'text', text: `You are a weather bot ${seq}.`, cache_control: hour },
        { type: 'text', text: 'Today is Saturday.' },
      ]);
      assert.deepEqual(body.tools.map((t: Json) => t.cache_control), [undefined, ephemeral]);
      assert.deepEqual(body.messages[0].content, [{ type: 'text', text: 'A long document...', cache_control: ephemeral }, { type: 'text', text: 'Weather in Paris?' }]);
      assert.deepEqual(body.messages[1].content[0].cache_control, ephemeral);
      assert.deepEqual(body.messages[2].content[0], { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'Sunny', cache_control: hour }], cache_control: ephemeral });

      // OpenAI caches long prompts by itself: its candidates get the same request without a breakpoint.
      for (const router of ['gpt', 'gpt-responses']) {
        fake.reset();
        const other = await anthropicClient(h.routerUrl, h.routingKey, router).messages.create(cachedRequest());
        assert.equal((other.content[0] as Anthropic.TextBlock).text, 'Hello from the fake.');
        const sentText = JSON.stringify(sent());
        assert.doesNotMatch(sentText, /cache_control/, router);
        assert.match(sentText, new RegExp(`You are a weather bot ${seq}\\.Today is Saturday\\.`), router);
      }
    });

    it('streamed alike, and a mid-conversation system message keeps its place after the top-level system', async () => {
      const req = cachedRequest();
      req.messages.push({ role: 'assistant', content: 'It is sunny.' }, { role: 'system' as any, content: [{ type: 'text', text: 'Answer in French.', cache_control: ephemeral }] }, { role: 'user', content: 'And tomorrow?' });
      const s = anthropicClient(h.routerUrl, h.routingKey, 'claude').messages.stream(req);
      assert.equal(await s.finalText(), 'Hello from the fake.');
      const body = sent();
      assert.equal(body.stream, true);
      assert.deepEqual(body.system.map((b: Json) => [b.text, b.cache_control]), [
        [`You are a weather bot ${seq}.`, hour],
        ['Today is Saturday.', undefined],
        ['\n\nAnswer in French.', ephemeral],
      ]);
      assert.deepEqual(body.cache_control, ephemeral);

      // Without a breakpoint, the system prompt goes as one string, as before.
      fake.reset();
      await anthropicClient(h.routerUrl, h.routingKey, 'claude').messages.create({ model: 'service/routing', max_tokens: 64, system: [{ type: 'text', text: 'Be brief.' }, { type: 'text', text: ' Be kind.' }], messages: [{ role: 'user', content: `hi ${++seq}` }] });
      assert.equal(sent().system, 'Be brief. Be kind.');
      assert.equal(sent().cache_control, undefined);
    });
  });

  describe('cached-token usage', () => {
    /** 5 uncached prompt tokens, 100 read from the cache and 20 written to it: 125 in OpenAI's count. */
    const cached = { text: 'cached answer', inputTokens: 5, cacheReadTokens: 100, cacheWriteTokens: 20, outputTokens: 7 };
    /** OpenAI reports no cache writes: 25 ordinary prompt tokens and 100 cached, 125 in all. */
    const openaiCached = { text: 'cached answer', inputTokens: 25, cacheReadTokens: 100, outputTokens: 7 };

    async function messagesUsage(router: string, stream: boolean): Promise<Json> {
      const c = anthropicClient(h.routerUrl, h.routingKey, router);
      const req = { model: 'service/routing', max_tokens: 64, messages: [{ role: 'user' as const, content: `usage ${++seq}` }] };
      const msg = stream ? await c.messages.stream(req).finalMessage() : await c.messages.create(req);
      assert.equal((msg.content[0] as Anthropic.TextBlock).text, 'cached answer');
      return msg.usage as Json;
    }

    async function chatUsage(router: string, stream: boolean): Promise<Json> {
      const c = openaiClient(h.routerUrl, h.routingKey, router, 'chat');
      const messages = [{ role: 'user' as const, content: `usage ${++seq}` }];
      if (!stream) return (await c.chat.completions.create({ model: 'service/routing', messages })).usage as Json;
      let usage: Json | undefined;
      for await (const chunk of await c.chat.completions.create({ model: 'service/routing', messages, stream: true, stream_options: { include_usage: true } })) usage = (chunk.usage as Json | undefined) ?? usage;
      return usage!;
    }

    async function responsesUsage(router: string, stream: boolean): Promise<Json> {
      const c = openaiClient(h.routerUrl, h.routingKey, router, 'responses');
      const input = `usage ${++seq}`;
      if (!stream) return (await c.responses.create({ model: 'service/routing', input })).usage as Json;
      const s = c.responses.stream({ model: 'service/routing', input });
      return (await s.finalResponse()).usage as Json;
    }

    const anthropicWay = { input_tokens: 5, cache_read_input_tokens: 100, cache_creation_input_tokens: 20, output_tokens: 7 };
    const pick = (u: Json, keys: string[]) => Object.fromEntries(keys.map((k) => [k, u[k]]));

    for (const stream of [false, true]) {
      const how = stream ? 'streamed' : 'not streamed';

      it(`from Anthropic: a messages client gets cache_read_input_tokens and cache_creation_input_tokens as sent (${how})`, async () => {
        fake.reply = cached;
        assert.deepEqual(pick(await messagesUsage('claude', stream), Object.keys(anthropicWay)), anthropicWay);
      });

      it(`from Anthropic: OpenAI clients get every prompt token in prompt/input tokens and the reads as cached_tokens (${how})`, async () => {
        fake.reply = cached;
        const chat = await chatUsage('claude', stream);
        assert.deepEqual([chat.prompt_tokens, chat.prompt_tokens_details?.cached_tokens, chat.completion_tokens, chat.total_tokens], [125, 100, 7, 132]);
        const resp = await responsesUsage('claude', stream);
        assert.deepEqual([resp.input_tokens, resp.input_tokens_details?.cached_tokens, resp.output_tokens, resp.total_tokens], [125, 100, 7, 132]);
      });

      for (const router of ['gpt', 'gpt-responses']) {
        it(`from OpenAI (${router}): each client format gets the cached tokens, a messages client without them in input_tokens (${how})`, async () => {
          fake.reply = openaiCached;
          const chat = await chatUsage(router, stream);
          assert.deepEqual([chat.prompt_tokens, chat.prompt_tokens_details?.cached_tokens, chat.total_tokens], [125, 100, 132]);
          const resp = await responsesUsage(router, stream);
          assert.deepEqual([resp.input_tokens, resp.input_tokens_details?.cached_tokens, resp.total_tokens], [125, 100, 132]);
          const msg = await messagesUsage(router, stream);
          assert.deepEqual(pick(msg, Object.keys(anthropicWay)), { input_tokens: 25, cache_read_input_tokens: 100, cache_creation_input_tokens: 0, output_tokens: 7 });
        });
      }
    }

    it('the cached tokens a client is told of leave usage records as they were: each provider’s own input count (Anthropic without cached tokens, OpenAI with them)', async () => {
      type Row = { model: string; model_calls: number; input_tokens: number };
      const rows = async () => (await json<{ groups: Row[] }>(await h.api('/v1/usage?group_by=model'), 200)).groups;
      fake.reply = cached;
      assert.deepEqual(pick(await messagesUsage('claude-billed', false), Object.keys(anthropicWay)), anthropicWay);
      fake.reply = openaiCached;
      assert.equal((await chatUsage('gpt-billed', true)).prompt_tokens_details?.cached_tokens, 100);
      const [claude, gpt] = await until(async () => {
        const now = await rows();
        const c = now.find((r) => r.model === 'anthropic/claude-billed');
        const g = now.find((r) => r.model === 'openai/gpt-billed');
        return c && g && ([c, g] as const);
      });
      assert.deepEqual([claude.model_calls, claude.input_tokens], [1, 5]);
      assert.deepEqual([gpt.model_calls, gpt.input_tokens], [1, 125]);
    });
  });
});
