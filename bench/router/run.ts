/**
 * Router benchmark (issue 6): the latency the router adds over calling the
 * fake upstream directly, measured at the client, interleaved in one run.
 *  - non-streaming chat completions at concurrency 1: p50/p99 of each path and of the difference
 *  - streaming: time to first token (first chunk carrying text), direct vs routed
 *  - the same through translation (chat in → anthropic upstream)
 *  - throughput through the router at rising concurrency, with p99
 *  - the same calls through LiteLLM's proxy (unless --no-litellm), for the ratio
 * Usage: node dist/bench/router/run.js [--n 2000] [--seconds 3] [--no-litellm]
 * Figures, not pass/fail.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { startLocalServices } from '../../infra/services/local-services.js';
import { freePort } from '../../infra/services/process.js';
import { fmt, summary } from '../support/percentiles.js';
import { BENCH_LIMITS } from '../support/stack.js';
import { LITELLM_KEY, startLitellm } from './litellm.js';

const { values } = parseArgs({ options: { n: { type: 'string', default: '2000' }, seconds: { type: 'string', default: '3' }, 'no-litellm': { type: 'boolean', default: false } } });
const N = Number(values.n);
const SECONDS = Number(values.seconds);
const agent = new Agent({ keepAliveTimeout: 60_000, connections: 256 });

function spawnNode(script: string, args: string[], env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(process.execPath, [join(__dirname, script), ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stderr!.on('data', (d: Buffer) => process.stderr.write(`[${script}] ${d}`));
  return child;
}

async function waitOk(url: string, tries = 200): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if ((await fetch(url).catch(() => null))?.ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${url} never became ready`);
}

/** One call; returns [total ms, ms to the first chunk that carries text]. */
async function call(url: string, headers: Record<string, string>, body: string): Promise<[number, number]> {
  const t0 = performance.now();
  const res = await request(url, { method: 'POST', headers, body, dispatcher: agent });
  let first = NaN;
  for await (const chunk of res.body) if (Number.isNaN(first) && /Hello|Hel/.test(String(chunk))) first = performance.now() - t0;
  if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}`);
  return [performance.now() - t0, first];
}

type Path = () => Promise<[number, number]>;

function row(label: string, direct: number[], other: number[]): { p50: number; p99: number; line: string } {
  const d = summary(direct);
  const o = summary(other);
  const added = { p50: o.p50 - d.p50, p99: o.p99 - d.p99 };
  return { ...added, line: `| ${label} | ${fmt(d.p50)} / ${fmt(d.p99)} | ${fmt(o.p50)} / ${fmt(o.p99)} | ${added.p50.toFixed(2)} ms / ${added.p99.toFixed(2)} ms |` };
}

/** Calls each path in turn, rotating the order every round, and reports what each adds over `direct`. */
async function interleaved(label: string, paths: { direct: Path; router: Path; litellm?: Path }, useFirst: boolean): Promise<void> {
  const names = Object.keys(paths).filter((k) => paths[k as keyof typeof paths]) as (keyof typeof paths)[];
  for (let i = 0; i < 200; i++) for (const n of names) await paths[n]!(); // warm-up: JIT, pools, caches
  const seen: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let i = 0; i < N; i++) {
    for (let k = 0; k < names.length; k++) {
      const n = names[(i + k) % names.length];
      const [total, first] = await paths[n]!();
      seen[n].push(useFirst ? first : total);
    }
  }
  const r = row(`${label}, router`, seen.direct, seen.router);
  console.log(r.line);
  if (seen.litellm) {
    const l = row(`${label}, LiteLLM`, seen.direct, seen.litellm);
    console.log(l.line + ` ratio p50 ${(l.p50 / r.p50).toFixed(1)}×, p99 ${(l.p99 / r.p99).toFixed(1)}× |`);
  }
}

async function throughput(routed: () => Promise<[number, number]>): Promise<void> {
  console.log('\n| concurrency | requests/s | p50 | p99 |\n|---|---|---|---|');
  for (const c of [1, 8, 32, 128]) {
    const lat: number[] = [];
    const until = performance.now() + SECONDS * 1000;
    await Promise.all(Array.from({ length: c }, async () => {
      while (performance.now() < until) lat.push((await routed())[0]);
    }));
    const s = summary(lat);
    console.log(`| ${c} | ${(lat.length / SECONDS).toFixed(0)} | ${fmt(s.p50)} | ${fmt(s.p99)} |`);
  }
}

async function run(): Promise<void> {
  const services = await startLocalServices({ log: () => undefined });
  const fake = spawnNode('fake-server.js', [], process.env);
  const fakeUrl = await new Promise<string>((resolve) => fake.stdout!.once('data', (d: Buffer) => resolve(String(d).trim())));
  const [webPort, routerPort] = [await freePort(), await freePort()];
  const apiKey = `tr_sk_bench_${randomBytes(12).toString('hex')}`;
  const routingKey = `tr_rk_bench_${randomBytes(12).toString('hex')}`;
  const env = { ...process.env, MONGODB_URL: services.mongodbUrl, REDIS_URL: services.redisUrl, TROUPE_MONGODB_DB: `bench_${randomBytes(4).toString('hex')}`, TROUPE_BOOTSTRAP_API_KEY: apiKey, TROUPE_BOOTSTRAP_ROUTING_KEY: routingKey, PORT: String(webPort), ROUTER_PORT: String(routerPort), LOG_LEVEL: 'warn', ...BENCH_LIMITS };
  const procs = [fake, spawnNode('../../src/main.js', ['web'], env), spawnNode('../../src/main.js', ['router'], env)];
  const litellmPort = await freePort();
  if (!values['no-litellm']) procs.push(startLitellm(litellmPort, fakeUrl));
  const litellm = values['no-litellm'] ? null : `http://127.0.0.1:${litellmPort}`;
  try {
    const base = `http://127.0.0.1:${webPort}`;
    const router = `http://127.0.0.1:${routerPort}`;
    await Promise.all([waitOk(`${base}/healthz`), waitOk(`${router}/healthz`), litellm ? waitOk(`${litellm}/health/liveliness`, 1200) : null]);
    const admin = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
    await fetch(`${base}/v1/credentials/BENCH_KEY`, { method: 'PUT', headers: admin, body: JSON.stringify({ value: 'sk-bench' }) });
    const cand = (provider: string, url: string) => ({ model: `bench/${provider}`, provider, upstream_model: 'm', base_url: url, api_key_credential: 'BENCH_KEY' });
    for (const [id, provider, url] of [['chat', 'openai', `${fakeUrl}/v1`], ['anth', 'anthropic', fakeUrl]]) {
      const res = await fetch(`${base}/v1/routers/${id}`, { method: 'PUT', headers: admin, body: JSON.stringify({ candidates: [cand(provider, url)] }) });
      if (!res.ok) throw new Error(`router ${id}: ${res.status} ${await res.text()}`);
    }
    const h = { authorization: `Bearer ${routingKey}`, 'content-type': 'application/json' };
    const chat = (stream: boolean) => JSON.stringify({ model: 'service/routing', messages: [{ role: 'user', content: 'Say hello.' }], stream });
    const direct = (stream: boolean) => JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'Say hello.' }], stream, ...(stream ? { stream_options: { include_usage: true } } : {}) });
    const anthDirect = (stream: boolean) => JSON.stringify({ model: 'm', max_tokens: 256, messages: [{ role: 'user', content: 'Say hello.' }], stream });
    const anthHeaders = { 'x-api-key': 'sk-bench', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' };
    console.log(`n=${N} per path, concurrency 1, interleaved; p50 / p99\n`);
    console.log('| case | direct to fake (p50 / p99) | through the proxy (p50 / p99) | added (p50 / p99) |\n|---|---|---|---|');
    const viaLitellm = (model: string, stream: boolean) => JSON.stringify({ model, messages: [{ role: 'user', content: 'Say hello.' }], stream });
    const lh = { 'content-type': 'application/json', authorization: `Bearer ${LITELLM_KEY}` };
    for (const stream of [false, true]) {
      await interleaved(`chat → openai${stream ? ', TTFT' : ''}`, {
        direct: () => call(`${fakeUrl}/v1/chat/completions`, h, direct(stream)),
        router: () => call(`${router}/chat/chat/completions`, h, chat(stream)),
        litellm: litellm ? () => call(`${litellm}/v1/chat/completions`, lh, viaLitellm('bench-openai', stream)) : undefined,
      }, stream);
      await interleaved(`chat → anthropic${stream ? ', TTFT' : ''}`, {
        direct: () => call(`${fakeUrl}/v1/messages`, anthHeaders, anthDirect(stream)),
        router: () => call(`${router}/anth/chat/completions`, h, chat(stream)),
        litellm: litellm ? () => call(`${litellm}/v1/chat/completions`, lh, viaLitellm('bench-anthropic', stream)) : undefined,
      }, stream);
    }
    await throughput(() => call(`${router}/chat/chat/completions`, h, chat(false)));
  } finally {
    for (const p of procs) p.kill('SIGTERM');
    await agent.close();
    await services.stop();
  }
}

run().catch((err) => {
  console.error(err);
  process.exit(1);
});
