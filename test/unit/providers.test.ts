import assert from 'node:assert/strict';
import { manifestSchema, validateManifest } from '../../src/app/agents/manifest.js';
import { DEFAULT_BASE_URL, OPTION_PROVIDERS, PROVIDER_SPECS, PROVIDERS, providersWith, type Provider } from '../../src/domain/providers.js';
import { putRouterBody } from '../../src/edge/api/routes/routers/schema.js';
import { LlmClient } from '../../src/lib/llm/client.js';
import { UpstreamError } from '../../src/lib/llm/errors.js';
import { FORMATS } from '../../src/lib/llm/formats/index.js';
import { anthropicMessages } from '../../src/lib/llm/formats/anthropic/index.js';
import { openaiChat } from '../../src/lib/llm/formats/openai-chat/index.js';
import { openaiResponses } from '../../src/lib/llm/formats/openai-responses/index.js';
import { recordedInput, type LlmRequest, type Target } from '../../src/lib/llm/types.js';
import type { JsonSchema } from '../../src/lib/schemas/validator.js';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';

type Props = Record<string, JsonSchema & { enum?: unknown[] }>;
const llmOption = (manifestSchema.properties as Record<string, JsonSchema>).llm_options.items as JsonSchema;
const manifestEnum = () => (llmOption.properties as Props).provider.enum;
const routerEnum = () => ((((putRouterBody.properties as Props).candidates.items as JsonSchema).properties as Props).provider.enum);
/** The manifest's "these providers need a model" branch. */
const modelBranchEnum = () => ((llmOption.allOf as { if: { properties: Props } }[])[1].if.properties.provider.enum);

/** The provider table (src/domain/providers.ts) is the one list: every enum and type is read from it. */
describe('provider descriptions', () => {
  it('list the providers the API has always named, in its order', () => {
    // The wire is frozen: the enums in /v1/openapi.json and the errors name exactly these, in this order.
    assert.deepEqual(PROVIDERS, ['openai', 'openai-responses', 'anthropic']);
    assert.deepEqual(OPTION_PROVIDERS, ['openai', 'openai-responses', 'anthropic', 'routing', 'scripted']);
  });

  it('are what the manifest schema, the router schema and the wire formats are derived from', () => {
    const table = Object.keys(PROVIDER_SPECS);
    assert.deepEqual(routerEnum(), table, 'router candidates name a provider of the table');
    assert.deepEqual(manifestEnum(), [...table, 'routing', 'scripted'], 'llm options name a provider of the table, the router or a script');
    assert.deepEqual(modelBranchEnum(), table, 'every provider of the table needs a model');
    assert.deepEqual(Object.keys(FORMATS), table);
    const byName = { 'openai-chat': openaiChat, 'openai-responses': openaiResponses, 'anthropic-messages': anthropicMessages };
    for (const p of PROVIDERS) {
      assert.equal(FORMATS[p], byName[PROVIDER_SPECS[p].format], `${p} speaks the format its description names`);
      assert.equal(DEFAULT_BASE_URL[p], PROVIDER_SPECS[p].baseUrl);
    }
  });

  it('decide what a manifest accepts: a provider outside the table is refused, each in it needs a model', () => {
    const manifest = (option: Record<string, unknown>) => ({ name: 'a', sdk: 'troupe-js@1', entrypoint: 'agent.js:agent', llm_options: [{ id: 'o', ...option }] });
    for (const p of PROVIDERS) {
      assert.equal(validateManifest(manifest({ provider: p, model: 'm' })).llm_options[0].provider, p);
      assert.throws(() => validateManifest(manifest({ provider: p })), /model/);
    }
    assert.throws(() => validateManifest(manifest({ provider: 'gemini', model: 'm' })), /provider/);
  });

  it('name the providers that have each capability', () => {
    assert.deepEqual(providersWith('configurationUpdate'), ['openai-responses']);
    assert.deepEqual(providersWith('thinkingMode'), ['anthropic']);
  });

  it('decide the recorded input tokens: uncached for anthropic, all prompt tokens for openai', () => {
    const usage = { inputTokens: 100, outputTokens: 5, cacheReadTokens: 30, cacheWriteTokens: 20 };
    for (const p of PROVIDERS) assert.equal(recordedInput(usage, p), PROVIDER_SPECS[p].recordedInput === 'uncached' ? 50 : 100, p);
    assert.equal(recordedInput(usage, 'anthropic'), 50);
    assert.equal(recordedInput(usage, 'openai'), 100);
  });

  describe('as the LLM client calls them', () => {
    let fake: FakeLlmUpstream;
    const client = new LlmClient({ allowPrivate: true });
    const req: LlmRequest = { items: [{ kind: 'message', role: 'user', content: [{ type: 'text', text: 'hi' }] }], maxTokens: 10, stream: false };
    // The fake serves OpenAI's API under /v1, as api.openai.com does, and Anthropic's at the root.
    const target = (provider: Provider): Target => ({ provider, model: 'm', apiKey: 'sk-test', baseUrl: provider === 'anthropic' ? fake.anthropicBase : fake.openaiBase });

    before(async () => (fake = await FakeLlmUpstream.start()));
    after(async () => {
      await client.close();
      await fake.close();
    });
    beforeEach(() => fake.reset());

    it('sends each call to its path with its auth and version headers', async () => {
      const expected: Record<Provider, { path: string; headers: Record<string, string | undefined> }> = {
        openai: { path: '/v1/chat/completions', headers: { authorization: 'Bearer sk-test', 'x-api-key': undefined, 'anthropic-version': undefined } },
        'openai-responses': { path: '/v1/responses', headers: { authorization: 'Bearer sk-test', 'x-api-key': undefined, 'anthropic-version': undefined } },
        anthropic: { path: '/v1/messages', headers: { authorization: undefined, 'x-api-key': 'sk-test', 'anthropic-version': '2023-06-01' } },
      };
      for (const p of PROVIDERS) {
        const res = await client.complete(req, target(p));
        assert.equal(res.blocks[0].type === 'text' && res.blocks[0].text, 'Hello from the fake.');
        const seen = fake.requests.at(-1)!;
        assert.equal(seen.path, expected[p].path, p);
        for (const [name, value] of Object.entries(expected[p].headers)) assert.equal(seen.headers[name], value, `${p} ${name}`);
        assert.equal(seen.headers['content-type'], 'application/json');
      }
    });

    it('gives an upstream Retry-After to callers in milliseconds, and none when it sent none', async () => {
      fake.failNext(429, 1, '1.5');
      await assert.rejects(client.complete(req, target('openai')), (e: UpstreamError) => e instanceof UpstreamError && e.status === 429 && e.retryAfterMs === 1500);
      fake.failNext(503);
      await assert.rejects(client.complete(req, target('anthropic')), (e: UpstreamError) => e instanceof UpstreamError && e.status === 503 && e.retryAfterMs === undefined);
    });
  });
});
