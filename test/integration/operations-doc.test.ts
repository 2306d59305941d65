import assert from 'node:assert/strict';
import { shardQueueName } from '../../actors/runtime/dispatcher.js';
import { SESSION } from '../../src/domain/actors/session.js';
import type { ToolDef } from '../../src/domain/agent.js';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { candidate } from '../fakes/llm-conversation.js';
import { agentWith } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { alertQueries, dashboardQueries, parseExposition, type DocQuery, type Sample } from '../support/operations-doc.js';
import { startRoleProcess, type RoleProcess } from '../support/role-process.js';
import { json, until } from '../support/wait.js';

const text = (t: string) => [{ type: 'text', text: t }];
/** Never answered: the session fails it after a second (outcome failed_timeout, as in the TroupeToolTimeouts alert). */
const slowTool: ToolDef = {
  name: 'lookup',
  kind: 'external',
  path: 'tools/lookup.json',
  timeout_seconds: 1,
  description: 'Look a thing up.',
  input_schema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
  output_schema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] },
};

/**
 * What an operator copies from docs/operations.md must select something: every
 * series the example alerts and the Grafana dashboard query is scraped here
 * from the roles of a Procfile deploy (web, router, worker, webhooks, each its
 * own process but web, which is in this one), after traffic that exercises
 * them, with the labels the queries match and group by, and the label values
 * they select with `=`.
 */
describe('docs/operations.md against a running deploy', function () {
  this.timeout(90_000);
  let h: Harness;
  let fake: FakeLlmUpstream;
  const procs: RoleProcess[] = [];
  /** Base URLs of every role's /metrics, by role. */
  const scrape = new Map<string, string>();
  let routerUrl = '';

  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ roles: ['web'], env: { TROUPE_SESSION_SHARDS: '4' } });
    scrape.set('web', h.baseUrl);
    // Two routed calls a minute per key, so the third is refused (troupe_rate_limit_refusals_total); one token a
    // minute per key, so the second is refused on tokens ({surface="routing_tokens"}); a candidate's breaker opens
    // at its first failure (troupe_router_breaker_transitions_total).
    const router = await startRoleProcess(['router'], { ...h.env, TROUPE_RATE_LIMIT_ROUTING_KEY_PER_MIN: '2', TROUPE_TOKEN_LIMIT_ROUTING_KEY_PER_MIN: '1', ROUTER_BREAKER_FAILURES: '1' });
    procs.push(router);
    routerUrl = `http://127.0.0.1:${router.ports.router}`;
    scrape.set('router', routerUrl);
    for (const role of ['worker', 'webhooks']) {
      const p = await startRoleProcess([role], { ...h.env, METRICS_PORT: '0' });
      procs.push(p);
      scrape.set(role, `http://127.0.0.1:${(await p.waitForLog('metrics listening')).port}`);
    }
  });
  after(async () => {
    for (const p of procs) p.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.exited));
    await h?.close();
    await fake?.close();
  });

  async function traffic(): Promise<void> {
    // An agent turn whose tool call times out: turns, ledger appends, tool outcomes, model calls (worker). Each of
    // its two model calls costs 0.07 USD (7 output tokens) against a session budget of 0.08: spend from turns, and
    // the 80% then the 100% threshold (worker).
    const { agentId } = await agentWith(h, { tools: [slowTool], llm_options: [{ id: 'main', provider: 'openai', model: 'gpt-ops', base_url: fake.openaiBase, input_price: 0, output_price: 10_000 }] });
    fake.reply = (body) => (JSON.stringify(body).includes('No result was submitted') ? { text: 'Gave up.' } : { text: '', toolCalls: [{ id: 'call_1', name: 'lookup', arguments: { q: 'x' } }] });
    const sid = (await json<{ id: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: { llm_api_key: 'sk-fake', budget_usd: 0.08 } }), 201)).id;
    const say = () => h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: text('look it up') } });
    const sent = await json<{ message: { id: string } }>(await say(), 201);
    await until(async () => (await json<{ status: string }>(await h.api(`/v1/sessions/${sid}/messages/${sent.message.id}`), 200)).status === 'completed', 20_000);
    // Once the second call's cost is counted, the next message is refused with 402 (web: troupe_budget_refusals_total).
    await until(async () => (await json<{ budgets: { spent_usd: number }[] }>(await h.api(`/v1/sessions/${sid}/usage`), 200)).budgets[0]?.spent_usd >= 0.08, 5000);
    assert.equal((await say()).status, 402);

    // A routed call that falls back, then one more than the key's rate (router).
    assert.equal((await h.api('/v1/credentials/FAKE_KEY', { method: 'PUT', json: { value: 'sk-fake-upstream' } })).status, 200);
    // Priced candidates: the call's cost is spend from routing (router: troupe_spend_usd_total).
    const price = { input_price: 1, output_price: 2 };
    assert.equal((await h.api('/v1/routers/ops', { method: 'PUT', json: { candidates: [candidate(fake, 'openai', 'openai/first', price), candidate(fake, 'openai', 'openai/second', price)] } })).status, 200);
    fake.failNext(503);
    const route = () => fetch(`${routerUrl}/ops/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${h.routingKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'service/routing', messages: [{ role: 'user', content: 'Hi' }] }) });
    const answers = [];
    for (let i = 0; i < 3; i++) {
      const res = await route();
      answers.push([res.status, ((await res.json()) as { error?: { message: string } }).error?.message.split(' ')[0] ?? 'ok']);
    }
    // The first falls back (and opens the first candidate's breaker) and spends the key's token; then the token limit, then the rate.
    assert.deepEqual(answers, [
      [200, 'ok'],
      [429, 'Token'],
      [429, 'Rate'],
    ]);

    // A message the worker cannot handle: its turn ends `failed` (TroupeActorFailures).
    await h.running.core.plane.queues.queue(shardQueueName(SESSION.name, 0)).add('malformed', {}, { attempts: 1 });
  }

  it('every series the example alerts and the dashboard query is served, with the labels and values they select', async () => {
    await traffic();
    const queries = [...alertQueries(), ...dashboardQueries()];
    assert.ok(queries.length >= 20, `${queries.length} queries in the doc`);
    let samples: Sample[] = [];
    let missing: string[] = [];
    // Bounded: the failed turn and the scrape-time queue probes settle within a few seconds.
    await until(async () => {
      samples = (await Promise.all([...scrape.values()].map(async (base) => parseExposition(await (await fetch(`${base}/metrics`)).text())))).flat();
      missing = queries.flatMap((q) => problems(q, samples));
      return missing.length === 0;
    }, 15_000).catch(() => undefined);
    assert.deepEqual(missing, [], `served by the roles: ${[...new Set(samples.map((s) => s.name))].filter((n) => n.startsWith('troupe_') && !/^troupe_(process|nodejs)_/.test(n)).sort().join(', ')}`);
  });
});

/** What of one query no role serves: a series, a label it matches or groups by, or a value it selects with `=`. */
function problems(q: DocQuery, samples: Sample[]): string[] {
  const out: string[] = [];
  const grouped = new Set<string>();
  assert.ok(q.series.length, `${q.where} queries no Troupe series: ${q.expr}`);
  for (const s of q.series) {
    const served = samples.filter((x) => x.name === s.name);
    if (!served.length) {
      out.push(`${q.where}: ${s.name} is served by no role`);
      continue;
    }
    served.forEach((x) => Object.keys(x.labels).forEach((l) => grouped.add(l)));
    for (const m of s.matchers) {
      if (!served.some((x) => m.label in x.labels)) out.push(`${q.where}: ${s.name} has no label ${m.label}`);
      else if (m.op === '=' && !served.some((x) => x.labels[m.label] === m.value)) out.push(`${q.where}: no ${s.name}{${m.label}="${m.value}"} (seen: ${[...new Set(served.map((x) => x.labels[m.label]))].join(', ')})`);
    }
  }
  for (const label of q.by) if (!grouped.has(label)) out.push(`${q.where}: "by (${label})" groups by a label none of its series has`);
  return out;
}
