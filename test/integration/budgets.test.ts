import assert from 'node:assert/strict';
import { toMicros, type BudgetRef } from '../../src/domain/budget.js';
import { Budgets } from '../../src/lib/budgets/budgets.js';
import { BudgetCounters } from '../../src/lib/budgets/budget-counters.js';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { candidate, chatRequest } from '../fakes/llm-conversation.js';
import { agentWith, scriptedAgent } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { json, until } from '../support/wait.js';
import { WebhookReceiver } from '../fakes/webhook-receiver.js';

type Json = Record<string, any>;

/** Output at 1000 USD per million tokens: a call capped at MAX_TOKENS costs at most 0.1 USD. */
const OUTPUT_PRICE = 1000;
const MAX_TOKENS = 100;

/**
 * Budgets against real Redis, Mongo and HTTP, with a fake upstream: concurrent routed calls at a nearly spent
 * budget, a session budget that stops the next turn and fails a queued one, thresholds once each, a period
 * boundary, the tenant boundary and bad bodies.
 */
describe('budgets', function () {
  this.timeout(30_000);
  let h: Harness;
  let fake: FakeLlmUpstream;
  let orgId: string;
  let routingKeyId: string;
  let rx: WebhookReceiver;

  before(async () => {
    fake = await FakeLlmUpstream.start();
    rx = await WebhookReceiver.start();
    h = await startHarness({ roles: ['web', 'router', 'worker', 'webhooks'], env: { TROUPE_WEBHOOKS_ALLOW_PRIVATE: '1' } });
    assert.equal((await h.api('/v1/credentials/FAKE_KEY', { method: 'PUT', json: { value: 'sk-fake-budget' } })).status, 200);
    const candidates = [candidate(fake, 'openai', 'bud/m', { input_price: 0, output_price: OUTPUT_PRICE })];
    assert.equal((await h.api('/v1/routers/bud', { method: 'PUT', json: { candidates } })).status, 200);
    orgId = (await json<Json>(await h.api('/v1/organization'), 200)).id;
    routingKeyId = (await h.running.core.stores.apiKeys.list(orgId)).find((k) => k.kind === 'routing')!._id;
  });
  after(async () => {
    await h?.close();
    await fake?.close();
    await rx?.close();
  });
  beforeEach(() => {
    fake.reset();
    fake.reply = { text: 'ok', inputTokens: 50, outputTokens: MAX_TOKENS };
  });

  const routed = (key = h.routingKey, maxTokens = MAX_TOKENS) =>
    fetch(`${h.routerUrl}/bud/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ ...chatRequest({ messages: [{ role: 'user', content: 'hi' }], tools: undefined }), max_tokens: maxTokens }),
    });
  const counters = () => h.running.core.budgets.counters;
  const spentUsd = async (ref: BudgetRef) => (await counters().spent(orgId, [ref]))[0] / 1e6;
  /** A counter of the process's metrics (all roles run in this one), summed over the series with these labels. */
  const counted = async (name: string, labels: Record<string, string>) =>
    (await h.running.core.metrics.registry.getSingleMetric(name)!.get()).values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((n, v) => n + v.value, 0);
  /** Micro-dollars reserved on a budget's counters in Redis: leases and calls not yet settled. */
  const reservedMicros = async (scope: string, id: string, period = 't') => Number((await h.running.core.redis.hget(h.running.core.keys.budget(orgId, scope, id, period).counters, 'res')) ?? 0);
  const setKeyBudget = async (id: string, budget: unknown, key = h.apiKey) => h.api(`/v1/keys/${id}`, { method: 'PATCH', json: { budget }, headers: { authorization: `Bearer ${key}` } });

  it('admits at most what fits in a nearly spent budget under 50 concurrent calls, and refuses the rest with 402', async () => {
    const budget = { amount_usd: 10, period: 'day' as const };
    assert.equal((await setKeyBudget(routingKeyId, budget)).status, 200);
    const ref: BudgetRef = { scope: 'routing_key', id: routingKeyId, budget };
    // 9.05 spent: room for 0.95, so exactly 9 calls of at most 0.1 each.
    await counters().settle({ orgId, refs: [ref] }, toMicros(9.05));
    const [refusals0, spend0] = [await counted('troupe_budget_refusals_total', { scope: 'routing_key' }), await counted('troupe_spend_usd_total', { source: 'routing' })];
    fake.delayMs = 150; // every admitted call is still in flight while the others are judged
    const answers = await Promise.all(Array.from({ length: 50 }, () => routed().then(async (r) => ({ status: r.status, body: (await r.json()) as Json }))));
    const ok = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 402);
    assert.equal(ok.length, 9);
    assert.equal(refused.length, 41);
    assert.equal(fake.requests.length, 9, 'a refused call never reaches the upstream');
    assert.equal((await counted('troupe_budget_refusals_total', { scope: 'routing_key' })) - refusals0, 41);
    assert.ok(Math.abs((await counted('troupe_spend_usd_total', { source: 'routing' })) - spend0 - 0.9) < 1e-9, 'nine calls of 0.1 USD counted as routing spend');
    const err = refused[0].body.error;
    assert.equal(err.code, 'budget_exceeded');
    assert.equal(err.type, 'payment_required');
    assert.deepEqual({ scope: err.budget.scope, id: err.budget.id, amount_usd: err.budget.amount_usd, period: err.budget.period }, { scope: 'routing_key', id: routingKeyId, ...budget });
    const tomorrow = new Date();
    tomorrow.setUTCHours(24, 0, 0, 0);
    assert.equal(err.budget.resets_at, tomorrow.toISOString());
    // The bound: spent never passes the amount, since each admitted call's cost is at most what it reserved;
    // overshoot = admitted × (cost − reservation) ≤ 0. Every reservation was replaced by the actual cost.
    await until(async () => Math.abs((await spentUsd(ref)) - 9.95) < 1e-9, 5000);
    assert.ok((await spentUsd(ref)) <= budget.amount_usd);
    const k = h.running.core.keys.budget(orgId, 'routing_key', routingKeyId, `d${new Date().toISOString().slice(0, 10)}`).counters;
    assert.equal(Number((await h.running.core.redis.hget(k, 'res')) ?? 0), 0);
    // GET /v1/usage shows the spend against the key's budget.
    const usage = await json<Json>(await h.api('/v1/usage'), 200);
    const row = usage.budgets.find((b: Json) => b.id === routingKeyId);
    assert.equal(row.spent_usd, 9.95);
    assert.equal(row.amount_usd, 10);
    assert.equal((await setKeyBudget(routingKeyId, null)).status, 200);
  });

  it('holds across processes: a second process admitting at the same time takes from the same room', async () => {
    const budget = { amount_usd: 10, period: 'total' as const };
    assert.equal((await setKeyBudget(routingKeyId, budget)).status, 200);
    const ref: BudgetRef = { scope: 'routing_key', id: routingKeyId, budget };
    await counters().settle({ orgId, refs: [ref] }, toMicros(9.05));
    // Another router process: its own budgets, caches and leases, the same Redis.
    const core = h.running.core;
    const other = new Budgets(new BudgetCounters(core.redis, core.keys), core.stores.orgs, core.stores.apiKeys, core.log, core.metrics);
    const router = (await core.stores.routers.get(orgId, 'bud'))!;
    fake.delayMs = 100;
    const [http, direct] = await Promise.all([
      Promise.all(Array.from({ length: 25 }, () => routed().then((r) => r.status))),
      Promise.all(Array.from({ length: 25 }, () => other.admitRouted(orgId, { _id: routingKeyId, org_id: orgId }, router.candidates, MAX_TOKENS, 0).then((c) => c, () => null))),
    ]);
    const admittedThere = direct.filter((c) => c !== null);
    // The other process's calls cost what they reserved.
    await Promise.all(admittedThere.map((c) => other.settle(c!, 0.1)));
    const admitted = http.filter((s) => s === 200).length + admittedThere.length;
    assert.ok(admitted >= 1 && admitted <= 9, `admitted ${admitted}`);
    assert.equal(http.filter((s) => s !== 200 && s !== 402).length, 0);
    await until(async () => Math.abs((await spentUsd(ref)) - (9.05 + 0.1 * admitted)) < 1e-9, 5000);
    assert.ok((await spentUsd(ref)) <= budget.amount_usd + 1e-9);
    await other.close();
    assert.equal((await setKeyBudget(routingKeyId, null)).status, 200);
  });

  it("a key's budget is its own org's: another org can neither set it nor is refused by it", async () => {
    const stores = h.running.core.stores;
    const other = await stores.orgs.create(`other-${Date.now()}`);
    const otherApi = (await stores.apiKeys.create(other._id, 'api')).key;
    const otherRouting = (await stores.apiKeys.create(other._id, 'routing')).key;
    // Spend the default org's routing key.
    const budget = { amount_usd: 1, period: 'total' as const };
    assert.equal((await setKeyBudget(routingKeyId, budget)).status, 200);
    await counters().settle({ orgId, refs: [{ scope: 'routing_key', id: routingKeyId, budget }] }, toMicros(1));
    assert.equal((await routed()).status, 402);
    // The other org may not see or change it: 404 as for an unknown key.
    const crossing = await setKeyBudget(routingKeyId, null, otherApi);
    assert.equal(crossing.status, 404);
    assert.equal((await stores.apiKeys.byId(routingKeyId))!.budget!.amount_usd, 1);
    // The other org's own calls are not refused by it.
    const auth = { authorization: `Bearer ${otherApi}` };
    assert.equal((await h.api('/v1/credentials/FAKE_KEY', { method: 'PUT', json: { value: 'sk-other' }, headers: auth })).status, 200);
    const candidates = [candidate(fake, 'openai', 'bud/m', { input_price: 0, output_price: OUTPUT_PRICE })];
    assert.equal((await h.api('/v1/routers/bud', { method: 'PUT', json: { candidates }, headers: auth })).status, 200);
    assert.equal((await routed(otherRouting)).status, 200);
    const otherUsage = await json<Json>(await h.api('/v1/usage', { headers: auth }), 200);
    assert.deepEqual(otherUsage.budgets, []);
    assert.equal((await setKeyBudget(routingKeyId, null)).status, 200);
    assert.equal((await routed()).status, 200);
  });

  it('stops a session at its budget: thresholds once each, a queued turn fails with budget_exceeded, the next gets 402', async () => {
    const { agentId } = await agentWith(h, { llm_options: [{ id: 'main', provider: 'openai', model: 'gpt-test', base_url: fake.openaiBase, input_price: 0, output_price: OUTPUT_PRICE }] });
    // Each turn costs 0.1: 0.1 (40%), 0.2 (80%), 0.3 (past 100%).
    const s = await json<Json>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: { llm_api_key: 'sk-session', budget_usd: 0.25 } }), 201);
    const metrics = async () => ({
      spend: await counted('troupe_spend_usd_total', { source: 'turns' }),
      refusals: await counted('troupe_budget_refusals_total', { scope: 'session' }),
      t80: await counted('troupe_budget_thresholds_total', { scope: 'session', threshold: '80' }),
      t100: await counted('troupe_budget_thresholds_total', { scope: 'session', threshold: '100' }),
    });
    const before = await metrics();
    const sync = async () => json<Json>(await h.api(`/v1/sessions/${s.id}/messages/sync`, { method: 'POST', json: { parts: [{ type: 'text', text: 'go' }] } }), 200);
    assert.equal((await sync()).status, 'completed');
    assert.equal((await sync()).status, 'completed');
    // The third runs slowly; the fourth is accepted (0.2 < 0.25) and queues behind it.
    fake.delayMs = 800;
    const send = (text: string) => h.api(`/v1/sessions/${s.id}/events`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text }] } });
    const third = await json<Json>(await send('third'), 201);
    const fourth = await json<Json>(await send('fourth'), 201);
    const message = async (id: string) => json<Json>(await h.api(`/v1/sessions/${s.id}/messages/${id}`), 200);
    const failed = await until(async () => {
      const m = await message(fourth.message.id);
      return m.status === 'failed' ? m : null;
    }, 10_000);
    assert.equal((await message(third.message.id)).status, 'completed');
    assert.match(failed.error, /^budget_exceeded: /);
    assert.equal(fake.requests.length, 3, 'the queued turn made no model call');
    // The next turn is refused at intake, with the budget in the error.
    const refused = await send('fifth');
    assert.equal(refused.status, 402);
    const err = ((await refused.json()) as Json).error;
    assert.equal(err.code, 'budget_exceeded');
    assert.deepEqual(err.budget, { scope: 'session', id: s.id, amount_usd: 0.25, period: 'total', spent_usd: 0.3, resets_at: null });
    const events = (await json<{ events: Json[] }>(await h.api(`/v1/sessions/${s.id}/events?limit=100`), 200)).events;
    const thresholds = events.filter((e) => e.type === 'budget.threshold_reached').map((e) => [e.data.threshold, e.data.spent_usd]);
    assert.deepEqual(thresholds, [
      [80, 0.2],
      [100, 0.3],
    ]);
    const failedStatus = events.find((e) => e.type === 'message.status_changed' && e.data.message_id === fourth.message.id && e.data.to === 'failed');
    assert.equal(failedStatus?.data.error_code, 'budget_exceeded');
    const usage = await json<Json>(await h.api(`/v1/sessions/${s.id}/usage`), 200);
    assert.deepEqual(usage.budgets.map((b: Json) => [b.scope, b.spent_usd]), [['session', 0.3]]);
    // The metrics say the same: 0.3 USD of turns, the two refusals (the queued turn's call, the fifth at intake), each threshold once.
    const after = await metrics();
    assert.ok(Math.abs(after.spend - before.spend - 0.3) < 1e-9, `spend from turns ${after.spend - before.spend}`);
    assert.deepEqual([after.refusals - before.refusals, after.t80 - before.t80, after.t100 - before.t100], [2, 1, 1]);
  });

  it('an org budget resets at the UTC day boundary, and its thresholds fire once per period, as webhooks', async () => {
    const { agentId } = await agentWith(h, { llm_options: [{ id: 'main', provider: 'scripted', script: 'main.json' }] });
    const put = await h.api(`/v1/agents/${agentId}/webhook`, { method: 'PUT', json: { webhook_url: `${rx.url}/budget`, event_types: ['budget.threshold_reached'] } });
    assert.equal(put.status, 200, await put.text());
    const c = counters();
    const realNow = c.now;
    const send = h.running.core.budgets.onCrossing!;
    let now = Date.parse('2026-03-09T23:59:00Z');
    c.now = () => now;
    try {
      const budget = { amount_usd: 0.5, period: 'day' as const };
      assert.equal((await h.api('/v1/organization', { method: 'PATCH', json: { budget } })).status, 200);
      const ref: BudgetRef = { scope: 'org', id: orgId, budget };
      const crossed: number[] = [];
      h.running.core.budgets.onCrossing = (x, o) => {
        if (x.ref.scope === 'org') crossed.push(x.threshold);
        send(x, o);
      };
      await c.settle({ orgId, refs: [ref] }, toMicros(0.3));
      for (let i = 0; i < 2; i++) assert.equal((await routed()).status, 200); // 0.4 (80%), 0.5 (100%)
      await until(async () => crossed.length === 2, 5000);
      const refused = await routed();
      assert.equal(refused.status, 402);
      const err = ((await refused.json()) as Json).error;
      assert.equal(err.budget.scope, 'org');
      assert.equal(err.budget.resets_at, '2026-03-10T00:00:00.000Z');
      // The next UTC day: a fresh period, spent 0, and the thresholds can fire again, once.
      now = Date.parse('2026-03-10T00:00:01Z');
      for (let i = 0; i < 5; i++) assert.equal((await routed()).status, 200);
      await until(async () => crossed.length === 4, 5000);
      assert.deepEqual(crossed, [80, 100, 80, 100]);
      assert.equal(await spentUsd(ref), 0.5);
      assert.equal((await routed()).status, 402);
      // Each crossing went to the agent's webhook once: the org's budget belongs to no session's ledger.
      const bodies = () => rx.received.filter((r) => r.path === '/budget').map((r) => JSON.parse(r.rawBody) as Json);
      await until(async () => bodies().length >= 4, 10_000);
      const got = bodies().map((b) => [b.type, b.data.scope, b.data.threshold, b.id]);
      assert.deepEqual(got.map((g) => g.slice(0, 3)), [['budget.threshold_reached', 'org', 80], ['budget.threshold_reached', 'org', 100], ['budget.threshold_reached', 'org', 80], ['budget.threshold_reached', 'org', 100]]);
      assert.equal(new Set(got.map((g) => g[3])).size, 4, 'one delivery per threshold and period');
    } finally {
      c.now = realNow;
      h.running.core.budgets.onCrossing = send;
      await h.api('/v1/organization', { method: 'PATCH', json: { budget: null } });
    }
  });

  it('settles a streamed routed call on its finish event, and gives its reservation back when the stream is cut or the client hangs up', async () => {
    // A routing key of its own, so its total counter starts at 0. At 1 USD a lease is one call's bound (0.1 USD):
    // what Redis holds reserved is exactly the calls not yet settled.
    const { key, doc } = await h.running.core.stores.apiKeys.create(orgId, 'routing');
    const budget = { amount_usd: 1, period: 'total' as const };
    assert.equal((await setKeyBudget(doc._id, budget)).status, 200);
    const ref: BudgetRef = { scope: 'routing_key', id: doc._id, budget };
    const streamed = (signal?: AbortSignal) =>
      fetch(`${h.routerUrl}/bud/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ ...chatRequest({ messages: [{ role: 'user', content: 'hi' }], tools: undefined }), max_tokens: MAX_TOKENS, stream: true }),
        signal,
      });
    // A whole stream: its usage (40 output tokens at 1000 USD per million: 0.04 USD) is what the budget counts.
    fake.reply = { text: 'ok', inputTokens: 50, outputTokens: 40 };
    const whole = await streamed();
    assert.equal(whole.status, 200);
    assert.match(await whole.text(), /\[DONE\]/);
    await until(async () => Math.abs((await spentUsd(ref)) - 0.04) < 1e-9 && (await reservedMicros('routing_key', doc._id)) === 0, 3000);

    // Cut by the upstream after its first content (committed, so no fallback): an error event, no usage, nothing counted.
    fake.reply = { text: 'a long answer that will be cut', inputTokens: 50, outputTokens: 40 };
    fake.cutStreamAfter = 5;
    const cut = await streamed();
    assert.equal(cut.status, 200);
    assert.match(await cut.text(), /failed after it started/);
    await until(async () => (await reservedMicros('routing_key', doc._id)) === 0, 3000);
    assert.equal(await spentUsd(ref), 0.04);

    // The client hangs up mid-stream: the upstream call is closed and the reservation given back.
    fake.cutStreamAfter = null;
    fake.eventDelayMs = 200;
    const ac = new AbortController();
    const gone = await streamed(ac.signal);
    const reader = gone.body!.getReader();
    const dec = new TextDecoder();
    let seen = '';
    const content = /"content":"[^"]+"/;
    for (let i = 0; i < 20 && !content.test(seen); i++) {
      const r = await reader.read();
      if (r.done) break;
      seen += dec.decode(r.value);
    }
    assert.match(seen, content);
    assert.ok((await reservedMicros('routing_key', doc._id)) > 0, 'the call holds its reservation while it streams');
    ac.abort();
    await reader.cancel().catch(() => undefined);
    await until(async () => fake.abortedStreams === 1 && (await reservedMicros('routing_key', doc._id)) === 0, 3000);
    assert.equal(await spentUsd(ref), 0.04);
  });

  it("an API key's budget is its own org's: another org can neither read nor change it, and its sessions are not refused by the first org's spent budgets", async () => {
    const stores = h.running.core.stores;
    const keyA = await stores.apiKeys.create(orgId, 'api');
    const authA = { authorization: `Bearer ${keyA.key}` };
    const other = await stores.orgs.create(`other-api-${Date.now()}`);
    const authB = { authorization: `Bearer ${(await stores.apiKeys.create(other._id, 'api')).key}` };
    const budget = { amount_usd: 1, period: 'total' as const };
    try {
      assert.equal((await setKeyBudget(keyA.doc._id, budget, keyA.key)).status, 200);
      // Org B: a 404 as for an unknown key, and the budget is unchanged; its usage shows none of org A's budgets.
      const crossing = await setKeyBudget(keyA.doc._id, null, authB.authorization.slice(7));
      const unknown = await setKeyBudget('apiKey_01HZZZZZZZZZZZZZZZZZZZZZZZ', null, authB.authorization.slice(7));
      assert.deepEqual([crossing.status, ((await crossing.json()) as Json).error.code], [unknown.status, ((await unknown.json()) as Json).error.code]);
      assert.equal(crossing.status, 404);
      assert.deepEqual((await stores.apiKeys.byId(keyA.doc._id))!.budget, budget);
      assert.ok((await json<Json>(await h.api('/v1/usage', { headers: authA }), 200)).budgets.some((b: Json) => b.id === keyA.doc._id), 'org A reads its key budget');
      assert.deepEqual((await json<Json>(await h.api('/v1/usage', { headers: authB }), 200)).budgets, []);
      // A process that first looks the key up for org B (it is not B's: none) still finds it for org A.
      const core = h.running.core;
      const fresh = new Budgets(new BudgetCounters(core.redis, core.keys), core.stores.orgs, core.stores.apiKeys, core.log, core.metrics);
      assert.deepEqual(await fresh.refsOf(other._id, null, { _id: 'session_x', org_id: other._id, api_key_id: keyA.doc._id }), []);
      assert.deepEqual((await fresh.refsOf(orgId, null, { _id: 'session_y', org_id: orgId, api_key_id: keyA.doc._id })).map((r) => [r.scope, r.id]), [['api_key', keyA.doc._id]]);
      await fresh.close();

      // Both orgs get the same org budget; org A's and its key's are spent.
      for (const auth of [authA, authB]) assert.equal((await h.api('/v1/organization', { method: 'PATCH', json: { budget }, headers: auth })).status, 200);
      await counters().settle({ orgId, refs: [{ scope: 'org', id: orgId, budget }, { scope: 'api_key', id: keyA.doc._id, budget }] }, toMicros(1));
      const turn = async (agentId: string, headers: Record<string, string>) => {
        const s = await json<Json>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: {}, headers }), 201);
        return h.api(`/v1/sessions/${s.id}/messages/sync`, { method: 'POST', json: { parts: [{ type: 'text', text: 'go' }] }, headers });
      };
      const a = await scriptedAgent(h, [{ text: 'hi' }]);
      const refused = await turn(a.agentId, authA);
      assert.equal(refused.status, 402);
      assert.equal(((await refused.json()) as Json).error.budget.scope, 'org');
      // Org B's session, its org budget of the same terms untouched, runs.
      const b = await scriptedAgent(h, [{ text: 'hi' }], { orgName: other.name });
      const done = await json<Json>(await turn(b.agentId, authB), 200);
      assert.equal(done.status, 'completed');
      const usageB = await json<Json>(await h.api('/v1/usage', { headers: authB }), 200);
      assert.deepEqual(usageB.budgets.map((x: Json) => [x.scope, x.id, x.spent_usd]), [['org', other._id, 0]]);
      // A batch created with the spent key counts against it as a session created alone does: its turn fails.
      assert.equal((await h.api('/v1/organization', { method: 'PATCH', json: { budget: null }, headers: authA })).status, 200);
      const priced = await agentWith(h, { llm_options: [{ id: 'main', provider: 'openai', model: 'gpt-test', base_url: fake.openaiBase, api_key_credential: 'FAKE_KEY', input_price: 0, output_price: OUTPUT_PRICE }] });
      const batch = await json<Json>(await h.api('/v1/session-batches', { method: 'POST', json: { items: [{ agent_id: priced.agentId, message: { content: [{ type: 'text', text: 'hi' }] } }] }, headers: authA }), 201);
      const sessionId = batch.sessions[0].session_id;
      const failed = await until(async () => {
        const { last_message_id } = await json<Json>(await h.api(`/v1/sessions/${sessionId}`, { headers: authA }), 200);
        const m = await json<Json>(await h.api(`/v1/sessions/${sessionId}/messages/${last_message_id}`, { headers: authA }), 200);
        return m.status === 'failed' || m.status === 'completed' ? m : null;
      }, 5000);
      assert.equal(failed.status, 'failed');
      assert.match(failed.error, /^budget_exceeded: The API key budget/);
      assert.equal(fake.requests.length, 0, 'the spent key made no model call');
    } finally {
      await h.api('/v1/organization', { method: 'PATCH', json: { budget: null } });
    }
  });

  it("shows a session's budget_usd on every session view, null when it has none", async () => {
    const { agentId } = await scriptedAgent(h, [{ text: 'hi' }]);
    const created = await json<Json>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: { budget_usd: 0.75 } }), 201);
    const plain = await json<Json>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: {} }), 201);
    assert.deepEqual([created.budget_usd, plain.budget_usd], [0.75, null]);
    assert.equal((await json<Json>(await h.api(`/v1/sessions/${created.id}`), 200)).budget_usd, 0.75);
    assert.equal((await json<Json>(await h.api(`/v1/sessions/${plain.id}`), 200)).budget_usd, null);
    const listed = (await json<Json>(await h.api('/v1/sessions?limit=10'), 200)).sessions as Json[];
    assert.deepEqual([created.id, plain.id].map((id) => listed.find((s) => s.id === id)?.budget_usd), [0.75, null]);
    // A turn's reply, and the one-shot message that creates its session.
    const turn = await json<Json>(await h.api(`/v1/sessions/${created.id}/events`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text: 'hi' }] } }), 201);
    assert.equal(turn.session.budget_usd, 0.75);
    const oneShot = await json<Json>(await h.api(`/v1/agents/${agentId}/messages`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text: 'hi' }], session: { budget_usd: 2 } } }), 201);
    assert.equal(oneShot.session.budget_usd, 2);
  });

  it('refuses bad budget bodies with 400', async () => {
    const bad = [{ amount_usd: -1, period: 'day' }, { amount_usd: 0, period: 'day' }, { amount_usd: 1, period: 'week' }, { amount_usd: 1 }, { amount_usd: '5', period: 'day' }, { amount_usd: 1, period: 'day', currency: 'EUR' }, 'ten', { amount_usd: 1e12, period: 'total' }];
    for (const budget of bad) {
      const org = await h.api('/v1/organization', { method: 'PATCH', json: { budget } });
      assert.equal(org.status, 400, JSON.stringify(budget));
      assert.equal(((await org.json()) as Json).error.type, 'invalid_request_error');
      assert.equal((await setKeyBudget(routingKeyId, budget)).status, 400, JSON.stringify(budget));
    }
    assert.equal((await h.api(`/v1/keys/${routingKeyId}`, { method: 'PATCH', json: {} })).status, 400);
    const { agentId } = await agentWith(h, { llm_options: [{ id: 'main', provider: 'openai', model: 'gpt-test', base_url: fake.openaiBase }] });
    for (const budget_usd of [0, -5, 'a', null]) {
      assert.equal((await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: { budget_usd } })).status, 400, String(budget_usd));
    }
    // Batch items take budget_usd too: a good one is the session's budget, a bad one fails only its item.
    const item = (budget_usd: unknown) => ({ agent_id: agentId, budget_usd, message: { content: [{ type: 'text', text: 'hi' }] } });
    const batch = await json<Json>(await h.api('/v1/session-batches', { method: 'POST', json: { items: [item(0.5), item(-1)] } }), 201);
    const [good, refused] = batch.sessions;
    assert.equal((await h.running.core.stores.sessions.byId(good.session_id))!.budget_usd, 0.5);
    assert.deepEqual([refused.status, refused.session_id], ['failed', null]);
    assert.match(refused.error, /budget_usd/);
  });
});
