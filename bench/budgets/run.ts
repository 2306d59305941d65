/**
 * What the budget check adds to a routed call (issue 34 asks at most 0.1 ms at p50): one process, one core,
 * two routing apps on the same stores and Redis, one with budgets and one without, answered by the same fake
 * upstream, called in alternating blocks so drift lands on both. Three cases side by side:
 * - off: no budget service at all (the build before budgets);
 * - none in force: budgets on, the org and key have none (one cached lookup, no Redis);
 * - in force: an org budget and a routing-key budget (one reservation script, overlapped with the stickiness read,
 *   and one settle script after the answer).
 *
 *   set -a; . /tmp/shared-services.env; set +a   # or any MONGODB_URL and REDIS_URL
 *   node dist/bench/budgets/run.js [--calls 3000] [--block 100]
 */
import { createServer, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createLogger } from '../../src/lib/log/logger.js';
import { startRoles } from '../../src/roles/start.js';
import { appDeps } from '../../src/roles/core.js';
import { createRouterApp } from '../../src/edge/router/app.js';
import { freePort } from '../../infra/services/process.js';
import { FakeLlmUpstream } from '../../test/fakes/llm-upstream.js';
import { candidate } from '../../test/fakes/llm-conversation.js';
import { benchArgs } from '../support/args.js';
import { summary } from '../support/percentiles.js';
import { useKeepAliveClient } from '../support/http-client.js';

const args = benchArgs('node dist/bench/budgets/run.js [--calls N] [--block N]', { calls: { type: 'string', default: '3000' }, block: { type: 'string', default: '20' } }, ['calls', 'block']);
const CALLS = Number(args.calls);
const BLOCK = Number(args.block);

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

async function main(): Promise<void> {
  useKeepAliveClient();
  const fake = await FakeLlmUpstream.start();
  fake.reply = { text: 'ok', inputTokens: 20, outputTokens: 5 };
  const apiKey = `tr_sk_bench_${randomBytes(12).toString('hex')}`;
  const routingKey = `tr_rk_bench_${randomBytes(12).toString('hex')}`;
  const webPort = await freePort();
  const env = {
    MONGODB_URL: process.env.MONGODB_URL ?? '',
    REDIS_URL: process.env.REDIS_URL ?? '',
    TROUPE_MONGODB_DB: `troupe_bench_budgets_${randomBytes(4).toString('hex')}`,
    TROUPE_REDIS_PREFIX: `bb${randomBytes(4).toString('hex')}`,
    TROUPE_BOOTSTRAP_API_KEY: apiKey,
    TROUPE_BOOTSTRAP_ROUTING_KEY: routingKey,
    PORT: String(webPort),
    TROUPE_PUBLIC_URL: `http://127.0.0.1:${webPort}`,
    TROUPE_MODELS_ALLOW_PRIVATE: '1',
    LOG_LEVEL: 'warn',
  };
  if (!env.MONGODB_URL || !env.REDIS_URL) throw new Error('set MONGODB_URL and REDIS_URL (e.g. . /tmp/shared-services.env)');
  const running = await startRoles(['web'], env, createLogger('warn'));
  const core = running.core;
  const base = `http://127.0.0.1:${webPort}`;
  const api = (path: string, method: string, json: unknown) => fetch(base + path, { method, headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify(json) });
  await api('/v1/credentials/FAKE_KEY', 'PUT', { value: 'sk-bench' });
  await api('/v1/routers/b', 'PUT', { candidates: [candidate(fake, 'openai', 'b/m', { input_price: 0.4, output_price: 1.6 })] });
  const deps = appDeps(core);
  const withBudgets = createRouterApp(deps);
  const without = createRouterApp({ ...deps, budgets: undefined });
  const servers = [createServer(withBudgets.listener), createServer(without.listener)];
  const [onUrl, offUrl] = await Promise.all(servers.map(listen));
  const body = JSON.stringify({ model: 'service/routing', messages: [{ role: 'user', content: 'hello' }], max_tokens: 64 });
  const call = async (url: string) => {
    const t0 = performance.now();
    const res = await fetch(`${url}/b/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${routingKey}` }, body });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`routed call answered ${res.status}`);
    return performance.now() - t0;
  };
  const run = async (cases: Record<string, string>): Promise<Record<string, number[]>> => {
    const out: Record<string, number[]> = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
    for (const url of Object.values(cases)) for (let i = 0; i < 200; i++) await call(url); // warm-up
    for (let done = 0; done < CALLS; done += BLOCK) for (const [k, url] of Object.entries(cases)) for (let i = 0; i < BLOCK; i++) out[k].push(await call(url));
    return out;
  };
  const none = await run({ off: offUrl, none: onUrl });
  // A budget far from spent on the org and on the routing key: every call reserves and settles on both.
  const orgId = (await core.stores.orgs.byName('default'))!._id;
  await api('/v1/organization', 'PATCH', { budget: { amount_usd: 1e6, period: 'month' } });
  const keyId = (await core.stores.apiKeys.list(orgId)).find((k) => k.kind === 'routing')!._id;
  await api(`/v1/keys/${keyId}`, 'PATCH', { budget: { amount_usd: 1e6, period: 'day' } });
  const inForce = await run({ off: offUrl, on: onUrl });
  // The check alone, in this process: what admission and settle cost a call on the event loop (robust to a loaded
  // host, where the end-to-end figures above swing by more than the check costs).
  const router = await core.stores.routers.get(orgId, 'b');
  const own: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const t0 = performance.now();
    const charge = await core.budgets.admitRouted(orgId, { _id: keyId, org_id: orgId }, router!.candidates, 64, body.length);
    core.budgets.settle(charge!, 0.0001);
    own.push(performance.now() - t0);
  }
  const row = (label: string, xs: number[], ref: number[]) => {
    const s = summary(xs);
    const d = s.p50 - summary(ref).p50;
    return `| ${label} | ${s.n} | ${s.p50.toFixed(3)} ms | ${s.p99.toFixed(3)} ms | ${d >= 0 ? '+' : ''}${d.toFixed(3)} ms |`;
  };
  console.log('| routed call (buffered, loopback fake upstream) | calls | p50 | p99 | p50 vs off (same run) |');
  console.log('|---|---|---|---|---|');
  console.log(row('budget checks off (run 1)', none.off, none.off));
  console.log(row('budgets on, none in force', none.none, none.off));
  console.log(row('budget checks off (run 2)', inForce.off, inForce.off));
  console.log(row('org + routing-key budget in force', inForce.on, inForce.off));
  const o = summary(own);
  console.log(`| the check alone (admit + settle, in process, both budgets) | ${o.n} | ${o.p50.toFixed(4)} ms | ${o.p99.toFixed(3)} ms | — |`);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  await Promise.all([withBudgets.close(), without.close()]);
  await core.db.dropDatabase().catch(() => undefined);
  await running.close();
  await fake.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
