import Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { anthropicClient, candidate, openaiClient, WEATHER_TOOL } from '../fakes/llm-conversation.js';
import { startHarness, type Harness } from '../support/harness.js';

type Json = Record<string, any>;
type Provider = 'openai' | 'openai-responses' | 'anthropic';
const PROVIDERS: Provider[] = ['openai', 'openai-responses', 'anthropic'];
const ROUTER: Record<Provider, string> = { openai: 'to-openai', 'openai-responses': 'to-responses', anthropic: 'to-anthropic' };

/** The structured answer, and the schema the client asks for it with. */
const WEATHER = { city: 'Paris', temp_c: 21 };
const WEATHER_SCHEMA = { type: 'object', properties: { city: { type: 'string' }, temp_c: { type: 'number' } }, required: ['city', 'temp_c'], additionalProperties: false };

/** The JSON-schema output format as each provider received it, or undefined when none was sent. */
function formatSent(provider: Provider, body: Json): Json | undefined {
  if (provider === 'openai') return body.response_format;
  if (provider === 'openai-responses') return body.text?.format;
  return body.output_config?.format;
}

/** The `get_weather` tool as the OpenAI SDK's runner takes it (with its function), recording each call's arguments. */
function weatherRunnerTool(calls: unknown[]): any {
  return { type: 'function', function: { name: WEATHER_TOOL.name, description: WEATHER_TOOL.description, parameters: WEATHER_TOOL.parameters, parse: JSON.parse, function: (args: unknown) => (calls.push(args), 'sunny') } };
}

/**
 * The routing interface walked as its users drive it: the vendors' SDK helpers (tool runners, stream helpers,
 * structured-output parsers) end to end through a model of another vendor, and request fields the vendors take
 * that must reach the model rather than be dropped on the way.
 */
describe('routing interface: the SDKs’ own helpers and the fields they send', function () {
  let h: Harness;
  let fake: FakeLlmUpstream;

  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ roles: ['web', 'router'] });
    assert.equal((await h.api('/v1/credentials/FAKE_KEY', { method: 'PUT', json: { value: 'sk-fake-upstream-key-123' } })).status, 200);
    for (const p of PROVIDERS) assert.equal((await h.api(`/v1/routers/${ROUTER[p]}`, { method: 'PUT', json: { candidates: [candidate(fake, p, `${p}/m`, { thinking: p === 'anthropic' })] } })).status, 200);
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });
  beforeEach(() => fake.reset());

  /** The model asks for the weather first, and answers once the tool's result is in its history. */
  function toolLoop(body: Json, kind: string): Json {
    const text = JSON.stringify(kind === 'anthropic' ? body.messages : kind === 'chat' ? body.messages : body.input);
    return text.includes('sunny') ? { text: 'It is sunny in Paris.' } : { toolCalls: [{ id: 'toolu_1', name: 'get_weather', arguments: { city: 'Paris' } }] };
  }

  for (const stream of [false, true]) {
    it(`openai chat.completions.runTools${stream ? ' (streaming)' : ''} runs a tool loop through an Anthropic model`, async () => {
      fake.reply = toolLoop;
      const calls: unknown[] = [];
      const runner = openaiClient(h.routerUrl, h.routingKey, 'to-anthropic', 'chat').chat.completions.runTools({
        model: 'service/routing',
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        tools: [weatherRunnerTool(calls)],
        ...(stream ? { stream: true } : {}),
      } as any);
      assert.equal(await runner.finalContent(), 'It is sunny in Paris.');
      assert.deepEqual(calls, [{ city: 'Paris' }]);
      assert.equal(fake.requests.length, 2);
      const second = fake.requests[1].body as Json;
      assert.deepEqual(second.messages.map((m: Json) => [m.role, m.content.map((b: Json) => b.type)]), [
        ['user', ['text']],
        ['assistant', ['tool_use']],
        ['user', ['tool_result']],
      ]);
      assert.equal(second.messages[2].content[0].tool_use_id, second.messages[1].content[0].id);
    });
  }

  it('openai chat.completions.stream: finalChatCompletion has the tool call, finish_reason and usage', async () => {
    fake.reply = { text: 'Checking.', toolCalls: [{ id: 'toolu_1', name: 'get_weather', arguments: { city: 'Paris' } }], inputTokens: 30, outputTokens: 12 };
    const s = openaiClient(h.routerUrl, h.routingKey, 'to-anthropic', 'chat').chat.completions.stream({ model: 'service/routing', messages: [{ role: 'user', content: 'Weather?' }], tools: [{ type: 'function', function: WEATHER_TOOL }] });
    const done = await s.finalChatCompletion();
    const choice = done.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.content, 'Checking.');
    assert.deepEqual(JSON.parse((choice.message.tool_calls![0] as any).function.arguments), { city: 'Paris' });
    assert.deepEqual(done.usage, { prompt_tokens: 30, completion_tokens: 12, total_tokens: 42, prompt_tokens_details: { cached_tokens: 0 } });
  });

  it('openai responses.stream: finalResponse has the function call, status and usage', async () => {
    fake.reply = { text: 'Checking.', toolCalls: [{ id: 'toolu_1', name: 'get_weather', arguments: { city: 'Paris' } }], inputTokens: 30, outputTokens: 12 };
    const s = openaiClient(h.routerUrl, h.routingKey, 'to-anthropic', 'responses').responses.stream({ model: 'service/routing', input: 'Weather?', tools: [{ type: 'function', ...WEATHER_TOOL, strict: false }] });
    const deltas: string[] = [];
    s.on('response.output_text.delta', (e) => deltas.push(e.delta));
    const done = await s.finalResponse();
    assert.equal(done.status, 'completed');
    assert.equal(done.output_text, 'Checking.');
    assert.equal(deltas.join(''), 'Checking.');
    const call = done.output.find((o) => o.type === 'function_call') as Json;
    assert.equal(call.call_id, 'toolu_1');
    assert.deepEqual(JSON.parse(call.arguments), { city: 'Paris' });
    assert.equal(done.usage?.input_tokens, 30);
    assert.equal(done.usage?.output_tokens, 12);
  });

  it('anthropic messages.stream: finalMessage has the tool_use and the usage of an OpenAI model', async () => {
    fake.reply = { text: 'Checking.', toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: { city: 'Paris' } }], inputTokens: 30, outputTokens: 12 };
    const s = anthropicClient(h.routerUrl, h.routingKey, 'to-openai').messages.stream({ model: 'service/routing', max_tokens: 100, messages: [{ role: 'user', content: 'Weather?' }], tools: [{ name: WEATHER_TOOL.name, input_schema: WEATHER_TOOL.parameters as any }] });
    const m = await s.finalMessage();
    assert.equal(m.stop_reason, 'tool_use');
    assert.deepEqual(m.content.map((b) => b.type), ['text', 'tool_use']);
    assert.deepEqual((m.content[1] as Anthropic.ToolUseBlock).input, { city: 'Paris' });
    assert.equal(m.usage.input_tokens, 30);
    assert.equal(m.usage.output_tokens, 12);
  });

  describe('structured output reaches the model in its own vendor’s field', () => {
    /** Like the vendors: JSON when a schema was asked for, prose otherwise. */
    const answer = (provider: Provider) => (body: Json) => ({ text: formatSent(provider, body)?.type === 'json_schema' ? JSON.stringify(WEATHER) : 'It is 21 degrees in Paris.' });

    for (const provider of PROVIDERS) {
      it(`chat.completions.parse with a json_schema response_format → ${provider}`, async () => {
        fake.reply = answer(provider);
        const out = await openaiClient(h.routerUrl, h.routingKey, ROUTER[provider], 'chat').chat.completions.parse({
          model: 'service/routing',
          messages: [{ role: 'user', content: 'Weather in Paris as JSON.' }],
          response_format: { type: 'json_schema', json_schema: { name: 'weather', schema: WEATHER_SCHEMA, strict: true } },
        });
        assert.deepEqual(out.choices[0].message.parsed, WEATHER);
        const sent = formatSent(provider, fake.requests[0].body)!;
        assert.deepEqual(sent.schema ?? sent.json_schema?.schema, WEATHER_SCHEMA);
        if (provider !== 'anthropic') assert.equal(sent.name ?? sent.json_schema?.name, 'weather');
      });

      it(`responses.parse with a json_schema text.format → ${provider}`, async () => {
        fake.reply = answer(provider);
        const out = await openaiClient(h.routerUrl, h.routingKey, ROUTER[provider], 'responses').responses.parse({
          model: 'service/routing',
          input: 'Weather in Paris as JSON.',
          text: { format: { type: 'json_schema', name: 'weather', schema: WEATHER_SCHEMA, strict: true } },
        });
        assert.deepEqual(out.output_parsed, WEATHER);
        const sent = formatSent(provider, fake.requests[0].body)!;
        assert.deepEqual(sent.schema ?? sent.json_schema?.schema, WEATHER_SCHEMA);
      });

      it(`messages with output_config.format → ${provider}`, async () => {
        fake.reply = answer(provider);
        const m = await anthropicClient(h.routerUrl, h.routingKey, ROUTER[provider]).messages.create({
          model: 'service/routing',
          max_tokens: 200,
          messages: [{ role: 'user', content: 'Weather in Paris as JSON.' }],
          output_config: { format: { type: 'json_schema', schema: WEATHER_SCHEMA } },
        });
        assert.deepEqual(JSON.parse((m.content[0] as Anthropic.TextBlock).text), WEATHER);
        assert.deepEqual(formatSent(provider, fake.requests[0].body)!.schema ?? formatSent(provider, fake.requests[0].body)!.json_schema?.schema, WEATHER_SCHEMA);
      });
    }

    it('json_object mode passes between the OpenAI formats', async () => {
      fake.reply = { text: '{}' };
      await openaiClient(h.routerUrl, h.routingKey, 'to-responses', 'chat').chat.completions.create({ model: 'service/routing', messages: [{ role: 'user', content: 'JSON please' }], response_format: { type: 'json_object' } });
      assert.deepEqual(fake.requests[0].body.text, { format: { type: 'json_object' } });
      await openaiClient(h.routerUrl, h.routingKey, 'to-openai', 'responses').responses.create({ model: 'service/routing', input: 'JSON please', text: { format: { type: 'json_object' } } });
      assert.deepEqual(fake.requests[1].body.response_format, { type: 'json_object' });
    });

    it('a malformed format is a 400 naming the field, before any model is called', async () => {
      const res = await fetch(`${h.routerUrl}/to-anthropic/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${h.routingKey}` },
        body: JSON.stringify({ model: 'service/routing', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema', json_schema: { schema: WEATHER_SCHEMA } } }),
      });
      assert.equal(res.status, 400);
      assert.equal(((await res.json()) as Json).error.param, 'response_format.json_schema.name');
      assert.equal(fake.requests.length, 0);
    });
  });

  describe('request fields the vendors take', () => {
    const chat = (router: string) => openaiClient(h.routerUrl, h.routingKey, router, 'chat');
    const responses = (router: string) => openaiClient(h.routerUrl, h.routingKey, router, 'responses');
    const messages = (router: string) => anthropicClient(h.routerUrl, h.routingKey, router);
    const weatherTool = { type: 'function' as const, function: WEATHER_TOOL };

    it('messages thinking {type: adaptive}, the current SDK’s form, reaches an Anthropic model as such', async () => {
      const m = await messages('to-anthropic').messages.create({ model: 'service/routing', max_tokens: 4000, thinking: { type: 'adaptive' }, messages: [{ role: 'user', content: 'Think, then answer.' }] });
      assert.equal(m.type, 'message');
      assert.deepEqual(fake.requests[0].body.thinking, { type: 'adaptive' });
      const refused = await messages('to-openai').messages.create({ model: 'service/routing', max_tokens: 4000, thinking: { type: 'adaptive' }, messages: [{ role: 'user', content: 'Think.' }] }).then(() => null, (e: unknown) => e);
      assert.ok(refused instanceof Anthropic.BadRequestError, String(refused));
      assert.equal(refused.errorCode, 'no_eligible_model', 'as for budgeted thinking, a model without thinking is skipped');
      assert.equal(fake.requests.length, 1);
    });

    it('a mid-conversation system message (messages role system) reaches every provider in its system prompt', async () => {
      const body = {
        model: 'service/routing',
        max_tokens: 100,
        system: 'You are terse.',
        messages: [
          { role: 'user', content: 'Hi' },
          { role: 'assistant', content: 'Hello.' },
          { role: 'user', content: 'Tell me about Paris.' },
          { role: 'system', content: [{ type: 'text', text: 'From now on, answer in French.' }] },
        ],
      } as any;
      await messages('to-openai').messages.create(body);
      const chatSent = fake.requests[0].body as Json;
      assert.deepEqual(chatSent.messages[0], { role: 'system', content: 'You are terse.\n\nFrom now on, answer in French.' });
      assert.deepEqual(chatSent.messages.slice(1).map((m: Json) => m.role), ['user', 'assistant', 'user']);
      await messages('to-anthropic').messages.create(body);
      const sent = fake.requests[1].body as Json;
      assert.equal(sent.system, 'You are terse.\n\nFrom now on, answer in French.');
      assert.deepEqual(sent.messages.map((m: Json) => m.role), ['user', 'assistant', 'user']);
    });

    it('parallel_tool_calls: false reaches each provider in its own form', async () => {
      await chat('to-anthropic').chat.completions.create({ model: 'service/routing', messages: [{ role: 'user', content: 'Weather?' }], tools: [weatherTool], parallel_tool_calls: false });
      assert.deepEqual(fake.requests[0].body.tool_choice, { type: 'auto', disable_parallel_tool_use: true });
      await messages('to-openai').messages.create({ model: 'service/routing', max_tokens: 100, messages: [{ role: 'user', content: 'Weather?' }], tools: [{ name: WEATHER_TOOL.name, input_schema: WEATHER_TOOL.parameters as any }], tool_choice: { type: 'any', disable_parallel_tool_use: true } });
      assert.equal(fake.requests[1].body.parallel_tool_calls, false);
      assert.equal(fake.requests[1].body.tool_choice, 'required');
      await responses('to-responses').responses.create({ model: 'service/routing', input: 'Weather?', tools: [{ type: 'function', ...WEATHER_TOOL, strict: false }], parallel_tool_calls: false });
      assert.equal(fake.requests[2].body.parallel_tool_calls, false);
    });

    it('empty and blank text from an OpenAI client never reaches an Anthropic model, which refuses it', async () => {
      fake.reply = { text: 'You are welcome.' };
      const out = await chat('to-anthropic').chat.completions.create({
        model: 'service/routing',
        tools: [weatherTool],
        messages: [
          { role: 'user', content: 'Weather in Paris?' },
          { role: 'assistant', content: '', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
          { role: 'tool', tool_call_id: 'call_1', content: '' },
          { role: 'user', content: [{ type: 'text', text: ' ' }, { type: 'text', text: 'Thanks' }] },
        ],
      });
      assert.equal(out.choices[0].message.content, 'You are welcome.');
      assert.deepEqual((fake.requests[0].body as Json).messages.slice(1), [
        { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1' }, { type: 'text', text: 'Thanks' }] },
      ]);
      await responses('to-anthropic').responses.create({ model: 'service/routing', input: [{ role: 'user', content: 'Hi' }, { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: '', annotations: [] }] } as any, { role: 'user', content: 'Again' }] });
      assert.deepEqual(fake.requests[1].body.messages, [{ role: 'user', content: [{ type: 'text', text: 'Hi' }, { type: 'text', text: 'Again' }] }]);
    });

    for (const stream of [false, true]) {
      it(`responses${stream ? ' (streaming)' : ''}: a custom tool is called back as a custom_tool_call, a namespaced one with its namespace`, async () => {
        fake.reply = { toolCalls: [{ id: 'toolu_1', name: 'apply_patch', arguments: { input: '*** Begin Patch\n"x"' } }, { id: 'toolu_2', name: 'fs__read', arguments: { path: 'a.txt' } }] };
        const tools = [
          { type: 'custom', name: 'apply_patch', description: 'Patch files.' },
          { type: 'namespace', name: 'fs', description: 'Files.', tools: [{ type: 'function', name: 'read', parameters: { type: 'object', properties: { path: { type: 'string' } } } }] },
        ];
        const body = { model: 'service/routing', input: 'Patch a.txt', tools } as any;
        const client = responses('to-anthropic');
        const out = stream ? await client.responses.stream(body).finalResponse() : await client.responses.create(body);
        const calls = out.output.map((o: Json) => ({ type: o.type, call_id: o.call_id, name: o.name, namespace: o.namespace, input: o.input, arguments: o.arguments }));
        assert.deepEqual(calls, [
          { type: 'custom_tool_call', call_id: 'toolu_1', name: 'apply_patch', namespace: undefined, input: '*** Begin Patch\n"x"', arguments: undefined },
          { type: 'function_call', call_id: 'toolu_2', name: 'read', namespace: 'fs', input: undefined, arguments: '{"path":"a.txt"}' },
        ]);
        // The client sends the calls back with their results: the model sees the names it was given.
        fake.reply = { text: 'Done.' };
        await client.responses.create({
          model: 'service/routing',
          tools,
          input: [
            { role: 'user', content: 'Patch a.txt' },
            { type: 'custom_tool_call', call_id: 'toolu_1', name: 'apply_patch', input: '*** Begin Patch' },
            { type: 'custom_tool_call_output', call_id: 'toolu_1', output: 'ok' },
            { type: 'function_call', call_id: 'toolu_2', name: 'read', namespace: 'fs', arguments: '{"path":"a.txt"}' },
            { type: 'function_call_output', call_id: 'toolu_2', output: 'hello' },
          ],
        } as any);
        const sent = fake.requests.at(-1)!.body as Json;
        const uses = sent.messages.flatMap((m: Json) => m.content.filter((b: Json) => b.type === 'tool_use').map((b: Json) => b.name));
        assert.deepEqual(uses, ['apply_patch', 'fs__read']);
        assert.deepEqual(sent.tools.map((t: Json) => t.name), ['apply_patch', 'fs__read']);
      });
    }
  });
});
