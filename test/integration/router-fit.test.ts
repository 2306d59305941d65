import Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { candidate } from '../fakes/llm-conversation.js';
import { startHarness, type Harness } from '../support/harness.js';

/**
 * The router as the vendors' own SDKs see it: model lists, Anthropic's
 * x-api-key, and errors raised as each SDK's typed errors with Troupe's code.
 */
describe('routing interface: ecosystem fit (official SDKs)', function () {
  let h: Harness;
  let fake: FakeLlmUpstream;
  const msg = { model: 'service/routing', max_tokens: 64, messages: [{ role: 'user' as const, content: 'Hi' }] };

  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ roles: ['web', 'router'] });
    assert.equal((await h.api('/v1/credentials/FAKE_KEY', { method: 'PUT', json: { value: 'sk-fake-upstream-key-123' } })).status, 200);
    const candidates = [candidate(fake, 'anthropic', 'anthropic/a'), candidate(fake, 'openai', 'openai/b')];
    assert.equal((await h.api('/v1/routers/main', { method: 'PUT', json: { default: true, candidates } })).status, 200);
    assert.equal((await h.api('/v1/routers/side', { method: 'PUT', json: { candidates: [candidates[1]] } })).status, 200);
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });

  /**
   * This SDK version sends `apiKey` as a Bearer token; Anthropic's own API,
   * curl examples, older SDKs and many tools send `x-api-key`, so the client
   * here is set up to send only that header.
   */
  const anthropic = (opts: ConstructorParameters<typeof Anthropic>[0] & { key?: string } = {}) =>
    new Anthropic({ apiKey: null, authToken: null, defaultHeaders: { 'x-api-key': opts.key ?? h.routingKey }, baseURL: h.routerUrl, maxRetries: 0, ...opts });
  const openai = (base: string, key = h.routingKey) => new OpenAI({ apiKey: key, baseURL: h.routerUrl + base, maxRetries: 0 });

  it('Anthropic SDK authenticates with x-api-key alone on /v1/messages', async () => {
    const seen: string[] = [];
    const spy: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      seen.push(`${headers.has('x-api-key')}/${headers.has('authorization')}`);
      return fetch(input, init);
    };
    const out = await anthropic({ fetch: spy }).messages.create(msg);
    assert.deepEqual(seen, ['true/false'], 'the SDK sent x-api-key and no Authorization');
    assert.equal(out.content[0].type === 'text' && out.content[0].text, 'Hello from the fake.');
    assert.equal((out as any).metadata.service_routing.selected_model, 'anthropic/a');
  });

  it('lists service/routing and the candidates: OpenAI SDK on /v1/models and both per-router forms', async () => {
    const ids = async (base: string) => (await openai(base).models.list()).data.map((m) => m.id);
    assert.deepEqual(await ids('/v1'), ['service/routing', 'anthropic/a', 'openai/b']);
    assert.deepEqual(await ids('/side'), ['service/routing', 'openai/b']);
    assert.deepEqual(await ids('/side/v1'), ['service/routing', 'openai/b']);
    const page = await openai('/v1').models.list();
    const first = page.data[0] as any;
    assert.equal(first.object, 'model');
    assert.equal(first.owned_by, 'troupe');
    assert.equal(typeof first.created, 'number');
    assert.equal(first.router_id, 'main');
    assert.equal((page.data[1] as any).owned_by, 'anthropic');
  });

  it('lists models for the Anthropic SDK too, with x-api-key', async () => {
    const ids: string[] = [];
    for await (const m of anthropic().models.list()) ids.push(m.id);
    assert.deepEqual(ids, ['service/routing', 'anthropic/a', 'openai/b']);
  });

  it('Anthropic SDK gets its own typed errors with Troupe code inside', async () => {
    const bad = await anthropic().messages.create({ ...msg, model: 'claude-x' }).then(() => null, (e: unknown) => e);
    assert.ok(bad instanceof Anthropic.BadRequestError, String(bad));
    assert.equal(bad.type, 'invalid_request_error');
    assert.equal((bad.error as any).type, 'error');
    assert.equal((bad.error as any).error.param, 'model');
    assert.equal(bad.errorCode, (bad.error as any).error.code);
    assert.match((bad.error as any).request_id, /^req_/);
    const unauth = await anthropic({ key: 'tr_rk_not_a_real_key_at_all' }).messages.create(msg).then(() => null, (e: unknown) => e);
    assert.ok(unauth instanceof Anthropic.AuthenticationError, String(unauth));
    assert.equal(unauth.errorCode, 'invalid_api_key');
    const wrongKind = await anthropic({ key: h.apiKey }).messages.create(msg).then(() => null, (e: unknown) => e);
    assert.ok(wrongKind instanceof Anthropic.AuthenticationError, 'a base-API key is not a routing key');
    const bearer = await new Anthropic({ apiKey: h.routingKey, authToken: null, baseURL: h.routerUrl, maxRetries: 0 }).messages.create(msg);
    assert.equal(bearer.type, 'message', 'the SDK default (Bearer) still works');
  });

  it('OpenAI SDK gets its own typed errors with Troupe code, param and type', async () => {
    const bad = await openai('/v1').chat.completions.create({ model: 'gpt-x', messages: [{ role: 'user', content: 'Hi' }] }).then(() => null, (e: unknown) => e);
    assert.ok(bad instanceof OpenAI.BadRequestError, String(bad));
    assert.equal(bad.param, 'model');
    assert.equal(bad.type, 'invalid_request_error');
    assert.ok(bad.code && bad.code.length > 0);
    const missing = await openai('/nope/v1').responses.create({ model: 'service/routing', input: 'Hi' }).then(() => null, (e: unknown) => e);
    assert.ok(missing instanceof OpenAI.NotFoundError, String(missing));
    assert.equal(missing.code, 'router_not_found');
    assert.equal(missing.param, null, 'param is present and null when no field is at fault');
    const unauth = await openai('/v1', 'tr_rk_not_a_real_key_at_all').models.list().then(() => null, (e: unknown) => e);
    assert.ok(unauth instanceof OpenAI.AuthenticationError, String(unauth));
    assert.equal(unauth.code, 'invalid_api_key');
  });

  it('serves the routing interface as its own OpenAPI document at /openapi.json', async () => {
    const doc = (await (await fetch(`${h.routerUrl}/openapi.json`)).json()) as { openapi: string; servers: { url: string }[]; paths: Record<string, unknown> };
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(doc.servers[0].url, h.env.TROUPE_ROUTING_PUBLIC_URL);
    for (const p of ['/v1/messages', '/{router_id}/messages', '/v1/chat/completions', '/v1/responses', '/{router_id}/v1/responses', '/v1/models']) assert.ok(doc.paths[p], p);
  });

  it('takes x-api-key only where Anthropic clients send it', async () => {
    const body = JSON.stringify({ model: 'service/routing', messages: [{ role: 'user', content: 'Hi' }] });
    const res = await fetch(`${h.routerUrl}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': h.routingKey }, body });
    assert.equal(res.status, 401);
    const err = ((await res.json()) as any).error;
    assert.deepEqual(Object.keys(err).sort(), ['code', 'message', 'param', 'type']);
    assert.equal(err.code, 'missing_api_key');
  });
});

/**
 * `GET /v1/models` before the organization has a default router: 200 with an empty list (nothing can be named
 * at /v1 yet; docs/decisions.md), for both SDKs, while a request there is refused with no_default_router and a
 * router named in the path is listed as usual. Once a default router is set, /v1/models lists it at once.
 */
describe('routing interface: the models list before a default router exists', function () {
  let h: Harness;
  let fake: FakeLlmUpstream;

  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ roles: ['web', 'router'] });
    assert.equal((await h.api('/v1/credentials/FAKE_KEY', { method: 'PUT', json: { value: 'sk-fake-upstream-key-123' } })).status, 200);
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });

  const openai = (base: string) => new OpenAI({ apiKey: h.routingKey, baseURL: h.routerUrl + base, maxRetries: 0 });
  const listed = async (path: string) => {
    const res = await fetch(h.routerUrl + path, { headers: { authorization: `Bearer ${h.routingKey}` } });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };

  it('lists nothing at /v1 with no router at all, and 404s a router named in the path', async () => {
    assert.deepEqual(await listed('/v1/models'), { status: 200, body: { object: 'list', data: [], has_more: false, first_id: null, last_id: null } });
    assert.deepEqual((await openai('/v1').models.list()).data, []);
    const ids: string[] = [];
    for await (const m of new Anthropic({ apiKey: h.routingKey, authToken: null, baseURL: h.routerUrl, maxRetries: 0 }).models.list()) ids.push(m.id);
    assert.deepEqual(ids, [], 'the Anthropic SDK reads the same body as an empty page');
    const missing = await listed('/side/models');
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, 'router_not_found');
  });

  it('with only a non-default router: /v1 still lists nothing (and refuses requests), the router is listed by id', async () => {
    assert.equal((await h.api('/v1/routers/side', { method: 'PUT', json: { candidates: [candidate(fake, 'openai', 'openai/b')] } })).status, 200);
    assert.deepEqual((await listed('/v1/models')).body.data, []);
    const refused = await openai('/v1').chat.completions.create({ model: 'service/routing', messages: [{ role: 'user', content: 'Hi' }] }).then(() => null, (e: unknown) => e);
    assert.ok(refused instanceof OpenAI.BadRequestError, String(refused));
    assert.equal(refused.code, 'no_default_router', 'what the empty list stands for');
    assert.deepEqual((await openai('/side/v1').models.list()).data.map((m) => m.id), ['service/routing', 'openai/b']);
  });

  it('lists the default router at /v1 as soon as there is one', async () => {
    assert.equal((await h.api('/v1/routers/side', { method: 'PUT', json: { default: true, candidates: [candidate(fake, 'openai', 'openai/b')] } })).status, 200);
    const { status, body } = await listed('/v1/models');
    assert.equal(status, 200);
    assert.deepEqual(body.data.map((m: { id: string }) => m.id), ['service/routing', 'openai/b']);
    assert.equal(body.first_id, 'service/routing');
    assert.equal(body.data[0].router_id, 'side');
  });
});
