import assert from 'node:assert/strict';
import { OrgLimitsLookup } from '../../src/lib/limits/org-limits.js';
import { TokenLimiter } from '../../src/lib/limits/token-limiter.js';
import { createLogger } from '../../src/lib/log/logger.js';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { candidate, chatRequest } from '../fakes/llm-conversation.js';
import { startHarness, type Harness } from '../support/harness.js';

type Json = Record<string, any>;

/**
 * Tokens per minute on the routing interface: counted from each settled call's usage, refused with 429 and the
 * RateLimit headers once a window is used up, per routing key and per org, and never across a tenant boundary.
 */
describe('routing token limits', function () {
  this.timeout(30_000);
  let h: Harness;
  let fake: FakeLlmUpstream;
  let seq = 0;

  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ roles: ['web', 'router'] });
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });

  /** A fresh org with a router on the fake, its API key and two routing keys (never seen, so never cached). */
  async function tenant(name: string, keyTokensPerMin?: number): Promise<{ orgId: string; api: string; limited: string; other: string }> {
    const { orgs, apiKeys } = h.running.core.stores;
    const org = await orgs.create(`${name}-${Date.now()}-${++seq}`);
    const api = (await apiKeys.create(org._id, 'api')).key;
    const limited = await apiKeys.create(org._id, 'routing');
    if (keyTokensPerMin !== undefined) await apiKeys.setTokensPerMin(org._id, limited.doc._id, keyTokensPerMin);
    const other = (await apiKeys.create(org._id, 'routing')).key;
    const auth = { authorization: `Bearer ${api}` };
    assert.equal((await h.api('/v1/credentials/FAKE_KEY', { method: 'PUT', headers: auth, json: { value: 'sk-fake-tokens' } })).status, 200);
    const put = await h.api('/v1/routers/tok', { method: 'PUT', headers: auth, json: { default: true, candidates: [candidate(fake, 'openai', 'tok/a')] } });
    assert.equal(put.status, 200, await put.text());
    return { orgId: org._id, api, limited: limited.key, other };
  }

  function call(key: string, stream = false): Promise<Response> {
    const body = { ...chatRequest({ messages: [{ role: 'user', content: `tokens ${++seq}` }], tools: undefined }), stream };
    return fetch(`${h.routerUrl}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify(body) });
  }

  async function ok(key: string, stream = false): Promise<void> {
    const res = await call(key, stream);
    assert.equal(res.status, 200, await res.clone().text());
    await res.arrayBuffer();
  }

  it('a routing key over its tokens per minute gets 429 with RateLimit headers; its org\'s other key and another org are unaffected', async () => {
    const a = await tenant('tpm-key', 30);
    const b = await tenant('tpm-key-other', 30);
    await ok(a.limited); // the fake reports 11 input + 7 output tokens: 18 of 30
    await ok(a.limited, true); // 36: a streamed call counts on its finish event too
    const before = fake.requests.length;
    const refused = await call(a.limited);
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('ratelimit-limit'), '30');
    assert.equal(refused.headers.get('ratelimit-remaining'), '0');
    assert.equal(refused.headers.get('ratelimit-policy'), '30;w=60');
    assert.ok(Number(refused.headers.get('retry-after')) >= 1 && Number(refused.headers.get('retry-after')) <= 60);
    assert.ok(Number(refused.headers.get('ratelimit-reset')) >= 1);
    const body = (await refused.json()) as Json;
    assert.equal(body.error.code, 'rate_limited');
    assert.match(body.error.message, /Token limit of 30 tokens per minute .* for this key reached/);
    assert.equal(fake.requests.length, before, 'a refused call reaches no upstream');

    // The same org's other key has no key limit; another org's key with the same limit has its own window.
    for (let i = 0; i < 3; i++) await ok(a.other);
    await ok(b.limited);
    await ok(b.limited);
    const m = await h.running.core.metrics.rateLimitRefusals.get();
    assert.ok((m.values.find((v) => v.labels.surface === 'routing_tokens' && v.labels.scope === 'key')?.value ?? 0) >= 1);
  });

  it("an org's own limit (PATCH /v1/organization) covers all its keys, only tightens, and bad values are 400", async () => {
    const c = await tenant('tpm-org');
    const auth = { authorization: `Bearer ${c.api}` };
    for (const bad of [0, -5, 1.5, 'many']) {
      const res = await h.api('/v1/organization', { method: 'PATCH', headers: auth, json: { tokens_per_min: bad } });
      assert.equal(res.status, 400, `tokens_per_min ${JSON.stringify(bad)}`);
      assert.equal(((await res.json()) as Json).error.type, 'invalid_request_error');
    }
    const patched = await h.api('/v1/organization', { method: 'PATCH', headers: auth, json: { tokens_per_min: 20 } });
    assert.equal(patched.status, 200);
    assert.equal(((await patched.json()) as Json).tokens_per_min, 20);
    await ok(c.limited); // 18 of 20
    await ok(c.other); // 36: both keys count against the org
    const refused = await call(c.limited);
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('ratelimit-limit'), '20');
    assert.match(((await refused.json()) as Json).error.message, /for this organization reached/);
    assert.equal((await call(c.other)).status, 429, 'every key of the org is refused');

    // The org cannot lift the operator's ceiling by asking for more.
    const lookup = new OrgLimitsLookup(h.running.core.stores.orgs, { api_per_min: 0, api_key_per_min: 0, routing_per_min: 0, routing_key_per_min: 0, running_sessions: 0, routing_tokens_per_min: 100 });
    await h.running.core.stores.orgs.setSettings(c.orgId, { tokens_per_min: 1000 });
    assert.equal((await lookup.of(c.orgId)).routing_tokens_per_min, 100);
  });

  it('a used-up window recovers when it ends, and a window never spans tenants', async () => {
    const { stores, redis, keys, metrics } = h.running.core;
    const org = await stores.orgs.create(`tpm-window-${Date.now()}`);
    await stores.orgs.setLimits(org._id, { routing_key_tokens_per_min: 10 });
    const limiter = new TokenLimiter(redis, keys, new OrgLimitsLookup(stores.orgs, { api_per_min: 0, api_key_per_min: 0, routing_per_min: 0, routing_key_per_min: 0, running_sessions: 0 }), metrics, createLogger('silent'), 1);
    const spend = await limiter.admit(org._id, { _id: 'key_window' });
    assert.ok(spend);
    spend.settle({ tokens: 25, usd: 0 });
    await assert.rejects(limiter.admit(org._id, { _id: 'key_window' }), (e: Json) => e.status === 429 && e.headers['RateLimit-Policy'] === '10;w=1');
    assert.ok(await limiter.admit(org._id, { _id: 'key_other' }), 'another key has its own window');
    // Seen by a second process reading the same Redis, once the spend has landed (within FLUSH_MS, 20 ms).
    const second = new TokenLimiter(redis, keys, new OrgLimitsLookup(stores.orgs, { api_per_min: 0, api_key_per_min: 0, routing_per_min: 0, routing_key_per_min: 0, running_sessions: 0 }), metrics, createLogger('silent'), 1);
    await new Promise((r) => setTimeout(r, 150));
    await assert.rejects(second.admit(org._id, { _id: 'key_window' }), (e: Json) => e.status === 429);
    await new Promise((r) => setTimeout(r, 1100));
    assert.ok(await limiter.admit(org._id, { _id: 'key_window' }), 'the next window admits again');
    assert.ok(await second.admit(org._id, { _id: 'key_window' }));
  });
});
