import assert from 'node:assert/strict';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { candidate, chatRequest } from '../fakes/llm-conversation.js';
import { startHarness, type Harness } from '../support/harness.js';

type Json = Record<string, any>;

const TIMEOUT_MS = 300;
const FAILURES = 2;

/**
 * The rest of health-aware routing: a hung upstream is abandoned after ROUTER_ATTEMPT_TIMEOUT_MS and counted on its
 * breaker, `prefer_low_latency: false` keeps a cheapest router's order, and every choice says why, in
 * service_routing.reason's codes and in troupe_router_selections_total.
 */
describe('routing health: attempt timeout, latency preference, reasons', function () {
  this.timeout(30_000);
  let h: Harness;
  let good: FakeLlmUpstream;
  let hung: FakeLlmUpstream;
  let seq = 0;

  before(async () => {
    good = await FakeLlmUpstream.start();
    hung = await FakeLlmUpstream.start();
    h = await startHarness({ roles: ['web', 'router'], env: { ROUTER_ATTEMPT_TIMEOUT_MS: String(TIMEOUT_MS), ROUTER_BREAKER_FAILURES: String(FAILURES), ROUTER_BREAKER_COOLDOWN_MS: '60000' } });
    assert.equal((await h.api('/v1/credentials/FAKE_KEY', { method: 'PUT', json: { value: 'sk-fake-health' } })).status, 200);
  });
  after(async () => {
    await h?.close();
    await good?.close();
    await hung?.close();
  });

  async function call(id: string, stream = false): Promise<{ model: string; reason: string; ms: number }> {
    const body = { ...chatRequest({ messages: [{ role: 'user', content: `health ${++seq}` }], tools: undefined }), stream };
    const t0 = performance.now();
    const res = await fetch(`${h.routerUrl}/${id}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${h.routingKey}` }, body: JSON.stringify(body) });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    const ms = performance.now() - t0;
    if (!stream) {
      const j = JSON.parse(text) as Json;
      return { model: j.service_routing.selected_model, reason: j.service_routing.reason, ms };
    }
    const model = /"selected_model":"([^"]+)"/.exec(text)![1];
    const reason = JSON.parse(`"${/"reason":"((?:[^"\\]|\\.)*)"/.exec(text)![1]}"`) as string;
    return { model, reason, ms };
  }

  async function selections(reason: string, model: string): Promise<number> {
    const { values } = await h.running.core.metrics.routerSelections.get();
    return values.find((v) => v.labels.model === model && v.labels.reason === reason)?.value ?? 0;
  }

  it('a hung upstream is timed out, counted on its breaker, and calls move to the other candidate', async () => {
    hung.delayMs = 5000; // answers nothing for longer than the timeout
    hung.firstEventDelayMs = 5000;
    const candidates = [candidate(hung, 'openai', 'hang/first'), candidate(good, 'openai', 'hang/second')];
    assert.equal((await h.api('/v1/routers/hang', { method: 'PUT', json: { candidates } })).status, 200);

    for (const stream of [false, true]) {
      const r = await call('hang', stream);
      assert.equal(r.model, 'hang/second');
      assert.ok(r.ms >= TIMEOUT_MS - 20 && r.ms < 3000, `fell back after the timeout, not the upstream's 5 s (${Math.round(r.ms)} ms)`);
      assert.match(r.reason, /^\[priority timeout:hang\/first fallback\] /);
      assert.match(r.reason, /no answer within 300 ms \(ROUTER_ATTEMPT_TIMEOUT_MS\)/);
    }
    assert.equal(hung.requests.length, 2);
    assert.equal(await selections('fallback', 'hang/second'), 2);

    // Two timeouts in a row opened its breaker: the next call does not wait for it at all.
    const skipped = await call('hang');
    assert.equal(skipped.model, 'hang/second');
    assert.ok(skipped.ms < TIMEOUT_MS, `the open candidate was not tried (${Math.round(skipped.ms)} ms)`);
    assert.match(skipped.reason, /^\[priority breaker_open:hang\/first\] /);
    assert.equal(hung.requests.length, 2);
    assert.equal(await selections('breaker_open', 'hang/second'), 1);
    hung.reset();
  });

  /** Two equally priced candidates, the first answering later. */
  async function tied(id: string, prefer?: boolean): Promise<Json> {
    hung.delayMs = 120;
    const candidates = [candidate(hung, 'openai', `${id}/slow`), candidate(good, 'openai', `${id}/fast`)];
    const res = await h.api(`/v1/routers/${id}`, { method: 'PUT', json: { candidates, policy: 'cheapest', ...(prefer === undefined ? {} : { prefer_low_latency: prefer }) } });
    assert.equal(res.status, 200);
    return (await res.json()) as Json;
  }

  it('prefer_low_latency: on by default (reason lower_answer_time), off keeps the policy order; a non-boolean is 400', async () => {
    const on = await tied('lat-on');
    assert.equal(on.prefer_low_latency, true);
    assert.equal((await call('lat-on')).model, 'lat-on/slow', 'nothing measured yet');
    await call('lat-on'); // the slow one is measured now; the fast one (unmeasured) is tried next and measured
    const chosen = await call('lat-on');
    assert.equal(chosen.model, 'lat-on/fast');
    assert.match(chosen.reason, /^\[cheapest lower_answer_time\] /);
    assert.ok((await selections('lower_answer_time', 'lat-on/fast')) >= 1);

    const off = await tied('lat-off', false);
    assert.equal(off.prefer_low_latency, false);
    assert.equal(((await (await h.api('/v1/routers/lat-off')).json()) as Json).prefer_low_latency, false);
    for (let i = 0; i < 3; i++) {
      const r = await call('lat-off');
      assert.equal(r.model, 'lat-off/slow');
      assert.match(r.reason, /^\[cheapest\] /);
    }
    assert.equal(await selections('first', 'lat-off/slow'), 3);
    hung.failNext(503);
    const failed = await call('lat-off');
    assert.equal(failed.model, 'lat-off/fast');
    assert.match(failed.reason, /^\[cheapest failed:lat-off\/slow fallback\] /);

    for (const bad of ['no', 0, null]) {
      const res = await h.api('/v1/routers/lat-bad', { method: 'PUT', json: { candidates: [candidate(good, 'openai', 'x')], prefer_low_latency: bad } });
      assert.equal(res.status, 400, JSON.stringify(bad));
      assert.equal(((await res.json()) as Json).error.param, 'prefer_low_latency');
    }
    hung.reset();
  });
});
