import assert from 'node:assert/strict';
import type Anthropic from '@anthropic-ai/sdk';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { anthropicClient, candidate } from '../fakes/llm-conversation.js';
import { startHarness, type Harness } from '../support/harness.js';

type Json = Record<string, any>;

/**
 * Prompt caching through the router: Anthropic cache_control breakpoints reach an anthropic candidate where the client
 * put them (and no OpenAI candidate, which caches by itself).
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
});
