import assert from 'node:assert/strict';
import { createRedis } from '../../src/lib/redis/connection.js';
import { RedisKeys } from '../../src/lib/redis/keys.js';
import { freePort } from '../../infra/services/process.js';
import { AuthFailureLimiter } from '../../src/lib/limits/auth-failures.js';
import { OrgLimitsLookup } from '../../src/lib/limits/org-limits.js';
import { RequestLimiter } from '../../src/lib/limits/request-limiter.js';
import { KeyAuthenticator } from '../../src/edge/api/middleware/auth.js';
import { createLogger } from '../../src/lib/log/logger.js';
import { Metrics } from '../../src/lib/metrics/metrics.js';
import { hashKey } from '../../src/store/api-keys.js';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { agentWith } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { until } from '../support/wait.js';

const FAILURES_PER_MIN = 5;
const ROUTING_PER_MIN = 3;

/** Authentication hardening (issue #30 item 6), against a real web and router with their Redis and MongoDB. */
describe('authentication hardening', function () {
  this.timeout(60_000);
  let h: Harness;
  let fake: FakeLlmUpstream;

  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ env: { TROUPE_AUTH_FAILURES_PER_MIN: String(FAILURES_PER_MIN), TROUPE_RATE_LIMIT_ROUTING_PER_MIN: String(ROUTING_PER_MIN), TROUPE_SESSION_SHARDS: '2' } });
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });

  // The harness's peer is loopback, so X-Forwarded-For's last entry is the client address (src/edge/api/client-address.ts).
  const from = (address: string, key: string) => ({ 'X-Forwarded-For': address, Authorization: `Bearer ${key}` });
  const agents = (address: string, key: string) => fetch(`${h.baseUrl}/v1/agents`, { headers: from(address, key) });
  const routed = (address: string, key: string, path = '/v1/messages') =>
    fetch(h.routerUrl + path, { method: 'POST', headers: { ...from(address, key), 'Content-Type': 'application/json' }, body: JSON.stringify({ model: 'service/routing', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }) });

  it('refuses a key longer than any real key as invalid, without looking it up', async () => {
    const store = h.running.core.stores.apiKeys;
    const original = store.findActiveByHash.bind(store);
    let lookups = 0;
    store.findActiveByHash = (hash) => (lookups++, original(hash));
    try {
      for (const len of [201, 5000]) {
        const res = await agents('198.51.100.1', 'k'.repeat(len));
        assert.equal(res.status, 401);
        assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'invalid_api_key');
      }
      assert.equal((await routed('198.51.100.1', 'k'.repeat(300))).status, 401);
      assert.equal(lookups, 0, 'no over-long key reached the store');
      assert.equal((await agents('198.51.100.1', 'k'.repeat(40))).status, 401);
      assert.equal(lookups, 1, 'a key of a plausible length is looked up');
    } finally {
      store.findActiveByHash = original;
    }
  });

  it('caches hits and misses under the hash of the key, never the key', async () => {
    const auth = new KeyAuthenticator(h.running.core.stores.apiKeys);
    const bad = 'tr_sk_not_a_real_key_0123456789abcdef';
    await assert.rejects(auth.authenticate(`Bearer ${bad}`, 'api'), /not valid/);
    await auth.authenticate(`Bearer ${h.apiKey}`, 'api');
    const cached = [...(auth as unknown as { cache: { entries: Map<string, unknown> } }).cache.entries.keys()];
    assert.deepEqual(cached.sort(), [hashKey(bad), hashKey(h.apiKey)].sort());
  });

  it('refuses an address past its failed authentications with a 429 and Retry-After in each ingress envelope, valid keys too, across both ingresses', async () => {
    const attacker = '203.0.113.7';
    for (let i = 0; i < FAILURES_PER_MIN; i++) assert.equal((await agents(attacker, `tr_sk_guess_${i}_0123456789abcdef`)).status, 401);
    const limited = await agents(attacker, 'tr_sk_guess_last_0123456789abcdef');
    assert.equal(limited.status, 429);
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    assert.deepEqual(((await limited.json()) as { error: { type: string; code: string } }).error.code, 'too_many_auth_failures');
    // A valid key from the blocked address is refused as well: otherwise the block would still tell a guesser
    // which guess was right (docs/decisions.md).
    assert.equal((await agents(attacker, h.apiKey)).status, 429);
    // Only the last X-Forwarded-For entry counts: one the client wrote in front changes nothing.
    assert.equal((await agents(`198.51.100.99, ${attacker}`, h.apiKey)).status, 429);
    // The count is in Redis: the router (its own authenticator) refuses the address's next failure at once,
    // in Anthropic's envelope on a Messages path and OpenAI's on chat, and then its valid key too.
    const anthropic = await routed(attacker, 'tr_rk_guess_0123456789abcdef');
    assert.equal(anthropic.status, 429);
    assert.ok(anthropic.headers.get('retry-after'));
    const body = (await anthropic.json()) as { type: string; error: { type: string; code: string } };
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'rate_limit_error');
    assert.equal(body.error.code, 'too_many_auth_failures');
    const openai = await routed(attacker, h.routingKey, '/v1/chat/completions');
    assert.equal(openai.status, 429);
    assert.equal(((await openai.json()) as { error: { code: string } }).error.code, 'too_many_auth_failures');
    // Another address is unaffected.
    assert.equal((await agents('203.0.113.8', h.apiKey)).status, 200);
  });

  it('counts an agent turn routed in-process against the org routing rate, as a routing-interface call', async () => {
    assert.equal((await h.api('/v1/credentials/ROUTED_KEY', { method: 'PUT', json: { value: 'routed-upstream-key' } })).status, 200);
    const candidates = [{ model: 'fake/gpt', provider: 'openai', upstream_model: 'gpt-routed', base_url: fake.openaiBase, api_key_credential: 'ROUTED_KEY' }];
    assert.equal((await h.api('/v1/routers/agents', { method: 'PUT', json: { candidates } })).status, 200);
    const { agentId } = await agentWith(h, { llm_options: [{ id: 'main', provider: 'routing', router_id: 'agents' }] });
    fake.reply = { text: 'Routed answer.' };
    const sid = ((await (await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: {} })).json()) as { id: string }).id;
    const turn = await h.api(`/v1/sessions/${sid}/messages/sync`, { method: 'POST', json: { parts: [{ type: 'text', text: 'route me' }] } });
    assert.equal(((await turn.json()) as { status: string }).status, 'completed');
    // One of the minute's 3 is spent by the turn: two calls over HTTP pass, the third is refused.
    const statuses = [];
    for (let i = 0; i < ROUTING_PER_MIN; i++) statuses.push((await routed('192.0.2.10', h.routingKey, '/agents/chat/completions')).status);
    assert.deepEqual(statuses, [200, 200, 429]);
    // And a turn over the limit waits out the window instead of calling the model.
    const calls = fake.requests.length;
    const sent = await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text: 'again' }] } });
    assert.equal(sent.status, 201);
    const retried = await until(async () => {
      const { events } = (await (await h.api(`/v1/sessions/${sid}/events?limit=100`)).json()) as { events: { type: string; data: { error?: string; retry_in_ms?: number } }[] };
      return events.find((e) => e.type === 'message.status_changed' && /Rate limit/.test(e.data.error ?? ''));
    });
    assert.ok(retried.data.retry_in_ms! >= 1000, JSON.stringify(retried));
    assert.equal(fake.requests.length, calls, 'no model call was made over the limit');
  });

  it('lets requests through when Redis cannot be reached, and counts each one in troupe_rate_limiter_fail_open_total', async () => {
    const closed = createRedis(`redis://127.0.0.1:${await freePort()}`, 'command', 'closed-port');
    const metrics = new Metrics('test');
    const log = createLogger('silent');
    const defaults = { ...h.running.core.config.limits, routing_per_min: 10, routing_key_per_min: 10 };
    try {
      const limiter = new RequestLimiter(closed, new RedisKeys('closed'), new OrgLimitsLookup(h.running.core.stores.orgs, defaults), metrics, log);
      assert.deepEqual(await limiter.admit('routing', 'org_x', 'key_x'), {});
      await limiter.admitRoutedTurn('org_x');
      const failures = new AuthFailureLimiter(closed, new RedisKeys('closed'), 5, metrics, log);
      assert.equal(await failures.failed('203.0.113.50'), null);
      const text = await metrics.registry.metrics();
      assert.match(text, /troupe_rate_limiter_fail_open_total\{surface="routing",role="test"\} 2/);
      assert.match(text, /troupe_rate_limiter_fail_open_total\{surface="routed_turns",role="test"\} 1/);
      assert.match(text, /troupe_rate_limiter_fail_open_total\{surface="auth_failures",role="test"\} 1/);
    } finally {
      closed.disconnect();
    }
  });
});
