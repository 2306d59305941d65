import assert from 'node:assert/strict';
import { CandidateHealth } from '../../src/lib/routing/health.js';
import type { CandidateDoc, RouterDoc } from '../../src/domain/views/router.js';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { candidate, chatRequest } from '../fakes/llm-conversation.js';
import { agentWith } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';

type Json = Record<string, any>;

const FAILURES = 2;
const COOL_DOWN_MS = 1500;

/**
 * A candidate that keeps failing is opened after ROUTER_BREAKER_FAILURES failures in a row and skipped; another
 * process reading the same Redis sees it open; after the cool-down one probe call closes it again.
 */
describe('routing circuit breaker', function () {
  this.timeout(30_000);
  let h: Harness;
  let fake: FakeLlmUpstream;
  /** A second upstream that answers late, for the latency preference. */
  let slow: FakeLlmUpstream;
  let seq = 0;

  before(async () => {
    fake = await FakeLlmUpstream.start();
    slow = await FakeLlmUpstream.start();
    slow.delayMs = 150;
    h = await startHarness({ roles: ['web', 'router', 'worker'], env: { ROUTER_BREAKER_FAILURES: String(FAILURES), ROUTER_BREAKER_COOLDOWN_MS: String(COOL_DOWN_MS) } });
    assert.equal((await h.api('/v1/credentials/FAKE_KEY', { method: 'PUT', json: { value: 'sk-fake-breaker' } })).status, 200);
  });
  after(async () => {
    await h?.close();
    await fake?.close();
    await slow?.close();
  });
  beforeEach(() => fake.reset());

  async function router(id: string, policy?: string): Promise<void> {
    const candidates = [candidate(fake, 'openai', `${id}/first`), candidate(fake, 'openai', `${id}/second`)];
    const res = await h.api(`/v1/routers/${id}`, { method: 'PUT', json: { candidates, ...(policy ? { policy } : {}) } });
    assert.equal(res.status, 200, await res.text());
  }

  async function call(id: string, stream = false, content = `breaker ${++seq}`): Promise<{ model: string; reason: string }> {
    const body = { ...chatRequest({ messages: [{ role: 'user', content }], tools: undefined }), stream };
    const res = await fetch(`${h.routerUrl}/${id}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${h.routingKey}` }, body: JSON.stringify(body) });
    assert.equal(res.status, 200);
    if (!stream) {
      const j = (await res.json()) as Json;
      return { model: j.service_routing.selected_model, reason: j.service_routing.reason };
    }
    const text = await res.text();
    const model = /"selected_model":"([^"]+)"/.exec(text)![1];
    const reason = JSON.parse(`"${/"reason":"((?:[^"\\]|\\.)*)"/.exec(text)![1]}"`) as string;
    return { model, reason };
  }

  const upstreamModels = () => fake.requests.map((r) => r.body.model);

  async function transitions(model: string, to: string): Promise<number> {
    const { values } = await h.running.core.metrics.routerBreakerTransitions.get();
    return values.find((v) => v.labels.model === model && v.labels.to === to)?.value ?? 0;
  }

  /** A second router process: its own cache, the same Redis. */
  function otherProcess(): CandidateHealth {
    return new CandidateHealth(h.running.core.redis, h.running.core.keys, { failures: FAILURES, coolDownMs: COOL_DOWN_MS });
  }

  const doc = (id: string): RouterDoc => ({ router_id: id, policy: 'priority', candidates: [{ model: `${id}/first` }, { model: `${id}/second` }] }) as unknown as RouterDoc;

  it('opens after N failures in a row, is skipped by every process, and closes after one probe', async () => {
    await router('brk');
    const orgId = ((await (await h.api('/v1/organization')).json()) as Json).id as string;
    for (let i = 0; i < FAILURES; i++) {
      fake.failNext(503);
      assert.equal((await call('brk')).model, 'brk/second');
    }
    assert.deepEqual(upstreamModels(), ['up-brk-first', 'up-brk-second', 'up-brk-first', 'up-brk-second']);
    assert.equal(await transitions('brk/first', 'open'), 1);

    // Open: the first candidate is not called at all, and the reason says why.
    fake.reset();
    const skipped = await call('brk');
    assert.equal(skipped.model, 'brk/second');
    assert.deepEqual(upstreamModels(), ['up-brk-second'], 'the open candidate was not tried');
    assert.match(skipped.reason, /Skipped while their circuit breaker is open: brk\/first\./);

    // Another process sees the shared state on its first look; another org's router of the same name does not.
    const r = doc('brk');
    const seen = await otherProcess().plan(orgId, r, r.candidates as CandidateDoc[], 'whole', false);
    assert.deepEqual(seen.order.map((c) => c.model), ['brk/second']);
    const otherOrg = await otherProcess().plan('org_someone_else', r, r.candidates as CandidateDoc[], 'whole', false);
    assert.deepEqual(otherOrg.order.map((c) => c.model), ['brk/first', 'brk/second'], "one org's failures never open another's breaker");

    // After the cool-down one call probes the first candidate; its success closes the breaker.
    await new Promise((r) => setTimeout(r, COOL_DOWN_MS + 100));
    fake.reset();
    const probe = await call('brk');
    assert.equal(probe.model, 'brk/first');
    assert.match(probe.reason, /brk\/first was tried as its circuit breaker's probe/);
    assert.equal(await transitions('brk/first', 'half_open'), 1);
    assert.equal(await transitions('brk/first', 'closed'), 1);
    assert.equal((await call('brk')).model, 'brk/first', 'closed again: back to the priority order');
    assert.deepEqual(upstreamModels(), ['up-brk-first', 'up-brk-first']);
    const after = await otherProcess().plan(orgId, r, r.candidates as CandidateDoc[], 'whole', false);
    assert.deepEqual(after.order.map((c) => c.model), ['brk/first', 'brk/second'], 'closed for every process');
  });

  it('a failed probe reopens for a fresh cool-down', async () => {
    await router('brk-reopen');
    for (let i = 0; i < FAILURES; i++) {
      fake.failNext(503);
      await call('brk-reopen', true);
    }
    await new Promise((r) => setTimeout(r, COOL_DOWN_MS + 100));
    fake.reset();
    fake.failNext(503);
    const probe = await call('brk-reopen', true);
    assert.equal(probe.model, 'brk-reopen/second', 'the probe failed and the call fell back');
    fake.reset();
    assert.equal((await call('brk-reopen', true)).model, 'brk-reopen/second');
    assert.deepEqual(upstreamModels(), ['up-brk-reopen-second'], 'reopened: not tried again before the new cool-down');
    assert.equal(await transitions('brk-reopen/first', 'open'), 2);
  });

  it('a success between failures keeps the breaker closed: only consecutive failures count', async () => {
    await router('brk-mixed');
    for (let i = 0; i < 3; i++) {
      fake.failNext(503, FAILURES - 1);
      assert.equal((await call('brk-mixed')).model, 'brk-mixed/second');
      assert.equal((await call('brk-mixed')).model, 'brk-mixed/first');
    }
    assert.equal(await transitions('brk-mixed/first', 'open'), 0);
  });

  it('when every candidate is open, the one open longest is still tried', async () => {
    await router('brk-all');
    // Both fail on each call: each call fails the first, then the second.
    for (let i = 0; i < FAILURES; i++) {
      fake.failNext(503, 2);
      const body = { ...chatRequest({ messages: [{ role: 'user', content: `breaker ${++seq}` }], tools: undefined }) };
      const res = await fetch(`${h.routerUrl}/brk-all/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${h.routingKey}` }, body: JSON.stringify(body) });
      assert.equal(res.status, 502);
      await res.arrayBuffer();
    }
    fake.reset();
    const tried = await call('brk-all');
    assert.equal(tried.model, 'brk-all/first', 'opened first, so open longest');
    assert.match(tried.reason, /Every eligible model's circuit breaker is open/);
    assert.deepEqual(upstreamModels(), ['up-brk-all-first']);
  });

  /** Two equally priced candidates, the first on the slow upstream. */
  async function tiedRouter(id: string, policy: 'cheapest' | 'priority'): Promise<void> {
    const candidates = [candidate(slow, 'openai', `${id}/slow`), candidate(fake, 'openai', `${id}/fast`)];
    const res = await h.api(`/v1/routers/${id}`, { method: 'PUT', json: { candidates, policy } });
    assert.equal(res.status, 200, await res.text());
  }

  it('a cheapest router prefers the faster of equally priced candidates, and a conversation keeps its model', async () => {
    await tiedRouter('lat', 'cheapest');
    // Nothing measured yet: the policy's order; the slow answer is measured.
    assert.equal((await call('lat', false, 'conversation on slow')).model, 'lat/slow');
    for (const stream of [false, false, true, true]) {
      const next = await call('lat', stream);
      if (!stream) {
        assert.equal(next.model, 'lat/fast');
        assert.match(next.reason, /Among equally priced models, lat\/fast has the lowest recent answer time/);
      }
    }
    const streamed = await call('lat', true);
    assert.equal(streamed.model, 'lat/fast');
    assert.match(streamed.reason, /lowest recent time to first token/);
    // Stickiness first: the conversation that started on the slow model stays there.
    assert.equal((await call('lat', false, 'conversation on slow')).model, 'lat/slow');
  });

  it("a priority router's order is never changed by latency", async () => {
    await tiedRouter('lat-prio', 'priority');
    for (let i = 0; i < 3; i++) {
      const r = await call('lat-prio');
      assert.equal(r.model, 'lat-prio/slow');
      assert.doesNotMatch(r.reason, /lowest recent/);
    }
  });

  it('a dead upstream: calls move to the other candidate within N failures, and return after it recovers', async () => {
    let dying = await FakeLlmUpstream.start();
    const port = Number(new URL(dying.url).port);
    const candidates = [candidate(dying, 'openai', 'brk-dead/first'), candidate(fake, 'openai', 'brk-dead/second')];
    assert.equal((await h.api('/v1/routers/brk-dead', { method: 'PUT', json: { candidates } })).status, 200);
    try {
      assert.equal((await call('brk-dead')).model, 'brk-dead/first');
      await dying.close();
      const served: string[] = [];
      for (let i = 0; i < FAILURES + 2; i++) served.push((await call('brk-dead')).model);
      assert.deepEqual(served, Array(FAILURES + 2).fill('brk-dead/second'));
      assert.equal(await transitions('brk-dead/first', 'open'), 1, `opened after ${FAILURES} connection failures`);
      fake.reset();
      await call('brk-dead');
      assert.deepEqual(upstreamModels(), ['up-brk-dead-second'], 'the dead one is no longer tried');
      dying = await FakeLlmUpstream.start(port);
      await new Promise((r) => setTimeout(r, COOL_DOWN_MS + 100));
      assert.equal((await call('brk-dead')).model, 'brk-dead/first', 'the probe found it back');
      assert.equal((await call('brk-dead')).model, 'brk-dead/first');
    } finally {
      await dying.close();
    }
  });

  it('a call to closed candidates costs no Redis round trip once their breakers were read', async () => {
    const redis = h.running.core.redis;
    const sent: string[] = [];
    // The real client, watched: every command this health object sends is counted.
    const watched = new Proxy(redis, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver);
        if (typeof v !== 'function' || (prop !== 'hmget' && prop !== 'eval')) return v;
        return (...args: unknown[]) => {
          sent.push(String(prop));
          return v.apply(target, args);
        };
      },
    });
    const health = new CandidateHealth(watched, h.running.core.keys, { failures: FAILURES, coolDownMs: COOL_DOWN_MS }, { refreshMs: 60_000 });
    const r = doc('brk-hot');
    const cands = r.candidates as CandidateDoc[];
    const first = health.plan('org_hot', r, cands, 'whole', false);
    assert.ok(first instanceof Promise, 'the first look reads Redis');
    await first;
    assert.deepEqual(sent, ['hmget', 'hmget']);
    for (let i = 0; i < 100; i++) {
      const p = health.plan('org_hot', r, cands, 'whole', false);
      assert.ok(!(p instanceof Promise), 'answered from the copy');
      health.succeeded('org_hot', 'brk-hot', cands[0], 1, 'whole');
    }
    assert.equal(sent.length, 2, 'no command after the first look');
  });

  it("an agent turn routed in-process skips a candidate the routing app's calls opened", async () => {
    await router('brk-turn');
    for (let i = 0; i < FAILURES; i++) {
      fake.failNext(503);
      assert.equal((await call('brk-turn')).model, 'brk-turn/second');
    }
    const { agentId } = await agentWith(h, { llm_options: [{ id: 'main', provider: 'routing', router_id: 'brk-turn' }] });
    const created = await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: {} });
    assert.equal(created.status, 201);
    const sid = ((await created.json()) as { id: string }).id;
    fake.reset();
    const res = await h.api(`/v1/sessions/${sid}/messages/sync`, { method: 'POST', json: { parts: [{ type: 'text', text: `turn ${++seq}` }] } });
    const m = (await res.json()) as { status: string };
    assert.equal(m.status, 'completed', JSON.stringify(m));
    assert.deepEqual(upstreamModels(), ['up-brk-turn-second'], "the worker's router-proxy read the shared breaker and never tried the open candidate");
  });
});
