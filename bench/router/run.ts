/**
 * Router benchmark (issue 6): the latency the router adds over calling the
 * fake upstream directly, measured at the client, interleaved in one run.
 *  - non-streaming chat completions at concurrency 1: p50/p99 of each path and of the difference
 *  - streaming: time to first token (first chunk carrying text), direct vs routed
 *  - the same through translation (chat in → anthropic upstream)
 *  - throughput through the router at rising concurrency, with p99
 *  - the same calls through LiteLLM's proxy and Portkey's gateway (unless --no-litellm / --no-portkey),
 *    interleaved with the router in the same rounds
 *  - --profile: the router process runs with --cpu-prof; its hot functions are summarised at the end
 *  - --no-rate-limit: the routing rate check is switched off, to show what its Redis round trip costs
 *  - --baseline <dist dir>: a second router process from another build (e.g. a copy of main's dist/)
 *    joins the same rounds, so a change is measured against what it replaces on the same host at the same time;
 *    --baseline-node-args='<flags>' starts it with Node/V8 flags (e.g. the same dist with a larger young generation);
 *    --router-node-args='<flags>' does the same for the measured router, so an A/B can be run both ways round
 *  - the floors (on unless --no-floor): four proxies that do nothing but forward join the rounds, so the router's
 *    own share is the difference: a bare node:http → undici byte-forwarding proxy (floor-proxy.ts), a lean one that
 *    reads HTTP off a `net` socket itself and forwards through undici's dispatch (lean-proxy.ts), a raw TCP relay
 *    in Node (tcp-relay.ts, no HTTP parsing: the least a Node process does per hop) and a Go standard-library reverse
 *    proxy (go-proxy/, built when `go` is installed, skipped with a note when not); --lean-net adds the lean proxy
 *    with a `net` upstream client too
 *  - each row also gives the router process's CPU time per call (all threads, from /proc/<pid>/task/<tid>/schedstat),
 *    which the other processes on a shared host disturb far less than latency
 *  - each timed call starts on a settled host: every process of the stack idle (settle.ts, bounded by --settle-ms,
 *    0 = off), so one proxy's work after its answer (logging, callbacks, GC) is not timed as part of the next
 *    path's call; how much of each proxy's CPU fell into the next call is reported either way
 *  - --tail: the router's CPU around each of its calls (main thread, other threads) and its GC counts per case,
 *    to tell whether its slowest calls did more work (GC, timers) or waited for a core (tail.ts)
 *  - --alloc: the router's allocation per call and its top allocation sites, per case (alloc-profile.ts)
 *  - LiteLLM and Portkey join every --peer-every'th round (5: 400 calls each at --n 2000), to keep the run's wall time
 * Usage: node dist/bench/router/run.js [--n 2000] [--seconds 2] [--no-litellm] [--no-portkey] [--no-rate-limit] [--profile] [--baseline DIR [--baseline-node-args='<flags>']] [--router-node-args='<flags>'] [--no-floor] [--lean-net] [--tail] [--alloc] [--settle-ms 50] [--peer-every 5]
 * Figures, not pass/fail.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { startLocalServices } from '../../infra/services/local-services.js';
import { freePort } from '../../infra/services/process.js';
import { fmt, summary } from '../support/percentiles.js';
import { BENCH_LIMITS, runSeconds } from '../support/stack.js';
import { printedOrigin } from './child-origin.js';
import { startGoProxy } from './go-proxy.js';
import { LITELLM_KEY, startLitellm } from './litellm.js';
import { portkeyHeaders, startPortkey } from './portkey.js';
import { summariseProfile } from './profile.js';
import { idleByThread, mainAndHelpers, sampleCpu, settle } from './settle.js';
import { gcCounts, reportTail, type TailSample } from './tail.js';
import { AllocSampler, inspectorUrl } from './alloc-profile.js';
import { censusRow, countSyscalls, traceSockets } from './syscalls.js';

const { values } = parseArgs({ options: { n: { type: 'string', default: '2000' }, seconds: { type: 'string', default: '2' }, 'no-litellm': { type: 'boolean', default: false }, 'no-portkey': { type: 'boolean', default: false }, 'no-rate-limit': { type: 'boolean', default: false }, profile: { type: 'boolean', default: false }, baseline: { type: 'string' }, /* accepted so older commands still run; the floors are on unless --no-floor */ floor: { type: 'boolean', default: true }, 'no-floor': { type: 'boolean', default: false }, 'settle-ms': { type: 'string', default: '50' }, syscalls: { type: 'string', default: '0' }, 'baseline-node-args': { type: 'string', default: '' }, 'peer-every': { type: 'string', default: '5' }, 'lean-net': { type: 'boolean', default: false }, tail: { type: 'boolean', default: false }, alloc: { type: 'boolean', default: false }, 'router-node-args': { type: 'string', default: '' } } });
const N = Number(values.n);
const SECONDS = Number(values.seconds);
/** With --profile, V8's sampling thread keeps the router from ever looking idle; a profile is for shares, not latency. */
const SETTLE_MS = values.profile ? 0 : Number(values['settle-ms']);
/** --syscalls N: instead of timing, count each proxy's and the upstream's syscalls over N calls per path (syscalls.ts). */
const SYSCALLS = Number(values.syscalls);
/**
 * LiteLLM and Portkey take 15-30 ms a call against the router's 2, and with every path settled before its call
 * they were most of the run's wall time (13 minutes at --n 2000). They join every PEER_EVERY-th round, spread
 * evenly over the run (400 timed calls each at --n 2000, every 5th round since the lean floor joined and took the
 * default run past 6 minutes at every 4th), which is plenty for figures 2-15 times the router's.
 */
const PEER_EVERY = Math.max(1, Number(values['peer-every']));
const SLOW_PEERS = new Set(['litellm', 'portkey']);
/** --tail: the router's CPU around each of its calls, main thread and the rest, to tell a tail of work from a tail of waiting (tail.ts). */
const TAIL = values.tail;
/** The router's origin, for its /metrics (GC counts per case with --tail). */
let routerOrigin = '';
/** Untimed rounds before each case (JIT, pools, caches): 200 until the lean floor joined, which would have taken the default run past 6 minutes. */
const WARM_UP = 100;
/** 0 = unlimited: the router skips its rate check (and that Redis round trip), to measure what the check costs. */
const NO_ROUTING_LIMITS = { TROUPE_RATE_LIMIT_ROUTING_PER_MIN: '0', TROUPE_RATE_LIMIT_ROUTING_KEY_PER_MIN: '0' };
const agent = new Agent({ keepAliveTimeout: 60_000, connections: 256 });

function spawnNode(script: string, args: string[], env: NodeJS.ProcessEnv, nodeArgs: string[] = [], dir = __dirname): ChildProcess {
  const child = spawn(process.execPath, [...nodeArgs, join(dir, script), ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
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

/** Non-empty answer text in any of the formats: a chat delta or message `content`, an Anthropic `text`. */
const ANSWER_TEXT = /"(?:content|text)":"[^"]/;

/** One call; returns [total ms, ms to the first chunk that carries text]. */
async function call(url: string, headers: Record<string, string>, body: string): Promise<[number, number]> {
  const t0 = performance.now();
  const res = await request(url, { method: 'POST', headers, body, dispatcher: agent });
  let first = NaN;
  let head = '';
  for await (const chunk of res.body) {
    if (head.length < 600) head += String(chunk);
    if (Number.isNaN(first) && ANSWER_TEXT.test(String(chunk))) first = performance.now() - t0;
  }
  // A proxy that answers without the text (an error, an empty stream) has not done the work.
  if (res.statusCode !== 200 || Number.isNaN(first)) throw new Error(`${url} answered ${res.statusCode} without the answer text: ${head}`);
  return [performance.now() - t0, first];
}

type Path = () => Promise<[number, number]>;

function row(label: string, direct: number[], other: number[]): { p50: number; p99: number; line: string } {
  const d = summary(direct);
  const o = summary(other);
  const added = { p50: o.p50 - d.p50, p99: o.p99 - d.p99 };
  return { ...added, line: `| ${label} | ${fmt(d.p50)} / ${fmt(d.p99)} | ${fmt(o.p50)} / ${fmt(o.p99)} | ${added.p50.toFixed(2)} ms / ${added.p99.toFixed(2)} ms |` };
}

type Peers = { direct: Path; router: Path; baseline?: Path; floor?: Path; lean?: Path; leanNet?: Path; relay?: Path; go?: Path; litellm?: Path; portkey?: Path };
const PEER_NAME: Record<string, string> = { router: 'router', baseline: 'baseline router', floor: 'bare Node proxy', lean: 'lean Node proxy (undici out)', leanNet: 'lean Node proxy (net out)', relay: 'Node TCP relay', go: 'Go reverse proxy', litellm: 'LiteLLM', portkey: 'Portkey' };
/** The router processes whose CPU per call is reported, by path name. */
const cpuPids: Partial<Record<keyof Peers, number>> = {};
/** The process behind each path (the fake upstream for `direct`): what settling waits for, and whose spill is measured. */
const pathPids: Partial<Record<keyof Peers, number>> = {};

/** Calls each path in turn, rotating the order every round, and reports what each proxy adds over `direct`. */
async function interleaved(label: string, paths: Peers, useFirst: boolean): Promise<void> {
  const names = Object.keys(paths).filter((k) => paths[k as keyof Peers]) as (keyof Peers)[];
  // The slow peers join every PEER_EVERY-th round (all rounds if 1), spread evenly over the run.
  const inRound = (i: number) => names.map((_, j) => j).filter((j) => i % PEER_EVERY === 0 || !SLOW_PEERS.has(names[j]));
  for (let i = 0; i < WARM_UP; i++) for (const j of inRound(i)) await paths[names[j]]!(); // warm-up: JIT, pools, caches
  const seen: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const cpu = (): Record<string, number> => Object.fromEntries(Object.entries(cpuPids).map(([n, pid]) => [n, runSeconds(pid!) ?? NaN]));
  const pids = names.map((n) => pathPids[n]!);
  // spill[p]: CPU that path p's process used during the next (other) path's timed call; waits[p]: settling after p.
  const spill: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const waits: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  let unsettled = 0;
  let prev = -1;
  const tail: TailSample[] = [];
  const gcBefore = TAIL ? await gcCounts(routerOrigin) : null;
  const cpuBefore = cpu();
  for (let i = 0; i < N; i++) {
    const round = inRound(i);
    for (let k = 0; k < round.length; k++) {
      const j = round[(i + k) % round.length];
      const n = names[j];
      if (SETTLE_MS > 0) {
        const w = await settle(pids, SETTLE_MS);
        if (prev >= 0) waits[names[prev]].push(w.ms);
        if (!w.settled) unsettled++;
      }
      const split = TAIL && n === 'router' ? mainAndHelpers(pathPids.router!) : null;
      const before = sampleCpu(pids).cpu;
      const [total, first] = await paths[n]!();
      const after = sampleCpu(pids).cpu;
      if (split) {
        const s1 = mainAndHelpers(pathPids.router!);
        tail.push({ ms: useFirst ? first : total, main: s1.main - split.main, helpers: s1.helpers - split.helpers });
      }
      if (prev >= 0 && prev !== j) spill[names[prev]].push(after[prev] - before[prev]);
      seen[n].push(useFirst ? first : total);
      prev = j;
    }
  }
  const cpuAfter = cpu();
  const perCall = (n: string) => `${(((cpuAfter[n] - cpuBefore[n]) * 1e6) / N).toFixed(0)} µs`;
  const r = row(`${label}, router`, seen.direct, seen.router);
  console.log(r.line + ` CPU ${perCall('router')}/call |`);
  for (const other of ['baseline', 'floor', 'lean', 'leanNet', 'relay', 'go'] as const) {
    if (!seen[other]) continue;
    const b = row(`${label}, ${PEER_NAME[other]}`, seen.direct, seen[other]);
    console.log(b.line + ` CPU ${perCall(other)}/call |`);
  }
  for (const peer of ['litellm', 'portkey'] as const) {
    if (!seen[peer]) continue;
    const l = row(`${label}, ${PEER_NAME[peer]}`, seen.direct, seen[peer]);
    console.log(l.line + ` ratio p50 ${(l.p50 / r.p50).toFixed(1)}×, p99 ${(l.p99 / r.p99).toFixed(1)}× |`);
  }
  reportSpill(names, spill, waits, unsettled);
  if (gcBefore) console.log(reportTail(tail, gcBefore, await gcCounts(routerOrigin), N));
}

/**
 * Each proxy's work that fell into the next path's timed call (its process's CPU during that call, which does not
 * involve it), and with settling on, how long the host took to go idle after it. The fake upstream (`direct`) serves
 * every path, so its share says nothing about leftovers and is not shown.
 */
function reportSpill(names: string[], spill: Record<string, number[]>, waits: Record<string, number[]>, unsettled: number): void {
  const parts = names.filter((n) => n !== 'direct').map((n) => {
    const s = spill[n];
    const mean = s.reduce((a, b) => a + b, 0) / Math.max(1, s.length);
    const over = s.filter((x) => x > 50).length / Math.max(1, s.length);
    const w = waits[n].length ? `, then idle after ${summary(waits[n]).p50.toFixed(1)} / ${summary(waits[n]).p99.toFixed(1)} ms (p50 / p99)` : '';
    return `${PEER_NAME[n] ?? n} ${mean.toFixed(0)} µs (${(100 * over).toFixed(0)}% of calls > 50 µs)${w}`;
  });
  console.log(`|   spill into the next call (mean CPU of the previous proxy during it): ${parts.join('; ')}${SETTLE_MS > 0 ? `; not idle within ${SETTLE_MS} ms before ${unsettled} calls` : ''} |`);
}

/**
 * The syscall census: for each case and each path, N calls with strace counting the proxy's syscalls and the
 * upstream's, per call. The direct path's upstream row is the floor every proxy's upstream row is compared with.
 * Then two calls per case through the router and the bare proxy with their socket syscalls written out in full.
 */
async function census(cases: [string, Peers][], upstreamPid: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'router-strace-'));
  console.log(`syscalls per call, ${SYSCALLS} calls per path, concurrency 1 (strace -f -c; full traces in ${dir})\n`);
  console.log('| case, path, process | all | bytes and waits | others (top 4) |\n|---|---|---|---|');
  const idle = await countSyscalls({ router: pathPids.router! }, dir, () => new Promise((r) => setTimeout(r, 2000)));
  console.log(censusRow('idle, router, per second', idle.router, 2));
  await traceSockets(pathPids.router!, `${dir}/idle-router.trace`, () => new Promise((r) => setTimeout(r, 2000)));
  for (const [label, paths] of cases) {
    for (const n of Object.keys(paths) as (keyof Peers)[]) {
      const path = paths[n];
      if (!path || n === 'litellm' || n === 'portkey') continue;
      for (let i = 0; i < 50; i++) await path();
      const pids: Record<string, number> = { upstream: upstreamPid, ...(n === 'direct' ? {} : { proxy: pathPids[n]! }) };
      const counts = await countSyscalls(pids, dir, async () => {
        for (let i = 0; i < SYSCALLS; i++) await path();
      });
      // The same number of calls untraced, back to back: the proxy's CPU per call (strace's own cost left out).
      const cpuPid = pathPids[n === 'direct' ? 'direct' : n]!;
      const before = sampleCpu([cpuPid]).cpu[0];
      for (let i = 0; i < SYSCALLS; i++) await path();
      const cpuUs = (sampleCpu([cpuPid]).cpu[0] - before) / SYSCALLS;
      if (counts.proxy) console.log(censusRow(`${label}, ${PEER_NAME[n] ?? n} (CPU ${cpuUs.toFixed(0)} µs/call untraced)`, counts.proxy, SYSCALLS));
      else console.log(`| ${label}, direct: the upstream's CPU untraced | ${cpuUs.toFixed(0)} µs/call | | |`);
      console.log(censusRow(`${label}, ${PEER_NAME[n] ?? n}: the upstream`, counts.upstream, SYSCALLS));
      if (n === 'router' || n === 'floor') {
        await traceSockets(pathPids[n]!, `${dir}/${label.replace(/\W+/g, '-')}-${n}.trace`, async () => {
          for (let i = 0; i < 2; i++) await path();
        });
      }
    }
  }
  // Idle again once start-up is long past (the figure at the top is taken a few seconds after start).
  console.log('');
  for (const n of ['router', 'baseline', 'floor', 'lean', 'leanNet', 'relay', 'go'] as const) {
    if (!pathPids[n]) continue;
    // With --profile, the router's profile is summarised over its idle period: what wakes it when nothing happens.
    if (n === 'router') profileWindow[0] = now();
    console.log(`${PEER_NAME[n]} CPU while idle after the calls, 5 s, by thread: ${await idleByThread(pathPids[n]!, 5000)}`);
    if (n === 'router') profileWindow[1] = now();
  }
}

/** Rising concurrency; the answer to "requests/s at p99 <= 15 ms" is the best rate whose p99 stays under the bound. */
async function throughput(routed: () => Promise<[number, number]>): Promise<void> {
  console.log('\n| concurrency | requests/s | p50 | p99 |\n|---|---|---|---|');
  let best = 0;
  for (const c of [1, 2, 4, 8, 16, 32, 64, 128]) {
    const lat: number[] = [];
    const until = performance.now() + SECONDS * 1000;
    await Promise.all(Array.from({ length: c }, async () => {
      while (performance.now() < until) lat.push((await routed())[0]);
    }));
    const s = summary(lat);
    const rps = lat.length / SECONDS;
    if (s.p99 <= 15) best = Math.max(best, rps);
    console.log(`| ${c} | ${rps.toFixed(0)} | ${fmt(s.p50)} | ${fmt(s.p99)} |`);
  }
  console.log(`\nrequests/s at p99 <= 15 ms: ${best.toFixed(0)}`);
}

/** The monotonic clock in µs, as a CPU profile's timestamps read it. */
const now = () => Number(process.hrtime.bigint() / 1000n);
/** With --profile: when the interleaved rounds ran (warm-up included), the part of the profile that is summarised. */
const profileWindow: [number, number] = [0, Infinity];

async function run(): Promise<void> {
  const startedAt = performance.now();
  const services = await startLocalServices({ log: () => undefined });
  const fake = spawnNode('fake-server.js', [], process.env);
  const fakeUrl = await printedOrigin(fake);
  const [webPort, routerPort] = [await freePort(), await freePort()];
  const apiKey = `tr_sk_bench_${randomBytes(12).toString('hex')}`;
  const routingKey = `tr_rk_bench_${randomBytes(12).toString('hex')}`;
  const env = { ...process.env, MONGODB_URL: services.mongodbUrl, REDIS_URL: services.redisUrl, TROUPE_MONGODB_DB: `bench_${randomBytes(4).toString('hex')}`, TROUPE_BOOTSTRAP_API_KEY: apiKey, TROUPE_BOOTSTRAP_ROUTING_KEY: routingKey, PORT: String(webPort), ROUTER_PORT: String(routerPort), LOG_LEVEL: 'warn', TROUPE_MODELS_ALLOW_PRIVATE: '1', ...BENCH_LIMITS, ...(values['no-rate-limit'] ? NO_ROUTING_LIMITS : {}) }; // the fake upstream is plain HTTP on loopback
  const profDir = values.profile ? mkdtempSync(join(tmpdir(), 'router-prof-')) : null;
  const routerArgs = values['router-node-args'].split(' ').filter(Boolean);
  const routerProc = spawnNode('../../src/main.js', ['router'], env, [...routerArgs, ...(profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []), ...(values.alloc ? ['--inspect=127.0.0.1:0'] : [])]);
  const routerInspector = values.alloc ? inspectorUrl(routerProc) : null;
  const procs = [fake, spawnNode('../../src/main.js', ['web'], env), routerProc];
  cpuPids.router = routerProc.pid;
  pathPids.router = routerProc.pid;
  pathPids.direct = fake.pid;
  // If this script dies without its cleanup (output piped into `head`, an uncaught error), its children go too.
  process.once('exit', () => procs.forEach((p) => p.exitCode === null && p.kill('SIGTERM')));
  const baselinePort = await freePort();
  if (values.baseline) {
    const nodeArgs = values['baseline-node-args'].split(' ').filter(Boolean);
    const b = spawnNode('src/main.js', ['router'], { ...env, ROUTER_PORT: String(baselinePort) }, nodeArgs, values.baseline);
    procs.push(b);
    cpuPids.baseline = pathPids.baseline = b.pid;
  }
  const baseline = values.baseline ? `http://127.0.0.1:${baselinePort}` : null;
  let floor: string | null = null;
  let lean: string | null = null;
  let leanNet: string | null = null;
  let relay: string | null = null;
  let go: string | null = null;
  if (!values['no-floor']) {
    const f = spawnNode('floor-proxy.js', [fakeUrl], process.env);
    const t = spawnNode('tcp-relay.js', [fakeUrl], process.env);
    const l = spawnNode('lean-proxy.js', [fakeUrl], process.env);
    procs.push(f, t, l);
    cpuPids.floor = pathPids.floor = f.pid;
    cpuPids.relay = pathPids.relay = t.pid;
    cpuPids.lean = pathPids.lean = l.pid;
    [floor, relay, lean] = await Promise.all([printedOrigin(f), printedOrigin(t), printedOrigin(l)]);
    if (values['lean-net']) {
      const ln = spawnNode('lean-proxy.js', [fakeUrl, '--net'], process.env);
      procs.push(ln);
      cpuPids.leanNet = pathPids.leanNet = ln.pid;
      leanNet = await printedOrigin(ln);
    }
    const g = await startGoProxy(fakeUrl);
    if ('skipped' in g) console.log(`Go reverse proxy skipped: ${g.skipped}`);
    else {
      procs.push(g.child);
      cpuPids.go = pathPids.go = g.child.pid;
      go = g.url;
    }
  }
  const [litellmPort, portkeyPort] = [await freePort(), await freePort()];
  if (!values['no-litellm']) procs.push(startLitellm(litellmPort, fakeUrl));
  if (!values['no-litellm']) pathPids.litellm = procs.at(-1)!.pid;
  if (!values['no-portkey']) procs.push(startPortkey(portkeyPort));
  if (!values['no-portkey']) pathPids.portkey = procs.at(-1)!.pid;
  const litellm = values['no-litellm'] ? null : `http://127.0.0.1:${litellmPort}`;
  const portkey = values['no-portkey'] ? null : `http://127.0.0.1:${portkeyPort}`;
  try {
    const base = `http://127.0.0.1:${webPort}`;
    const router = `http://127.0.0.1:${routerPort}`;
    routerOrigin = router;
    await Promise.all([waitOk(`${base}/healthz`), waitOk(`${router}/healthz`), baseline ? waitOk(`${baseline}/healthz`) : null, litellm ? waitOk(`${litellm}/health/liveliness`, 1200) : null, portkey ? waitOk(`${portkey}/`, 600) : null]);
    console.log(`uptime: ${execFileSync('uptime').toString().trim()}`);
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
    const idle0 = runSeconds(routerProc.pid!) ?? NaN;
    await new Promise((r) => setTimeout(r, 2000));
    console.log(`router CPU while idle: ${(((runSeconds(routerProc.pid!) ?? NaN) - idle0) * 500).toFixed(1)} ms/s`);
    const viaLitellm = (model: string, stream: boolean) => JSON.stringify({ model, messages: [{ role: 'user', content: 'Say hello.' }], stream });
    const lh = { 'content-type': 'application/json', authorization: `Bearer ${LITELLM_KEY}` };
    const cases: [string, Peers][] = [];
    for (const stream of [false, true]) {
      cases.push([`chat → openai${stream ? ', TTFT' : ''}`, {
        direct: () => call(`${fakeUrl}/v1/chat/completions`, h, direct(stream)),
        router: () => call(`${router}/chat/chat/completions`, h, chat(stream)),
        baseline: baseline ? () => call(`${baseline}/chat/chat/completions`, h, chat(stream)) : undefined,
        floor: floor ? () => call(`${floor}/chat/chat/completions`, h, chat(stream)) : undefined,
        lean: lean ? () => call(`${lean}/chat/chat/completions`, h, chat(stream)) : undefined,
        leanNet: leanNet ? () => call(`${leanNet}/chat/chat/completions`, h, chat(stream)) : undefined,
        relay: relay ? () => call(`${relay}/v1/chat/completions`, h, direct(stream)) : undefined,
        go: go ? () => call(`${go}/v1/chat/completions`, h, direct(stream)) : undefined,
        litellm: litellm ? () => call(`${litellm}/v1/chat/completions`, lh, viaLitellm('bench-openai', stream)) : undefined,
        portkey: portkey ? () => call(`${portkey}/v1/chat/completions`, portkeyHeaders('openai', fakeUrl), direct(stream)) : undefined,
      }]);
      cases.push([`chat → anthropic${stream ? ', TTFT' : ''}`, {
        direct: () => call(`${fakeUrl}/v1/messages`, anthHeaders, anthDirect(stream)),
        router: () => call(`${router}/anth/chat/completions`, h, chat(stream)),
        baseline: baseline ? () => call(`${baseline}/anth/chat/completions`, h, chat(stream)) : undefined,
        floor: floor ? () => call(`${floor}/anth/chat/completions`, h, chat(stream)) : undefined,
        lean: lean ? () => call(`${lean}/anth/chat/completions`, h, chat(stream)) : undefined,
        leanNet: leanNet ? () => call(`${leanNet}/anth/chat/completions`, h, chat(stream)) : undefined,
        relay: relay ? () => call(`${relay}/v1/messages`, anthHeaders, anthDirect(stream)) : undefined,
        go: go ? () => call(`${go}/v1/messages`, anthHeaders, anthDirect(stream)) : undefined,
        litellm: litellm ? () => call(`${litellm}/v1/chat/completions`, lh, viaLitellm('bench-anthropic', stream)) : undefined,
        portkey: portkey ? () => call(`${portkey}/v1/chat/completions`, portkeyHeaders('anthropic', fakeUrl), JSON.stringify({ model: 'm', max_tokens: 256, messages: [{ role: 'user', content: 'Say hello.' }], stream })) : undefined, // chat in, anthropic out
      }]);
    }
    if (SYSCALLS > 0) await census(cases, fake.pid!);
    else {
      console.log(`n=${N} per path (LiteLLM and Portkey ${Math.ceil(N / PEER_EVERY)}: every ${PEER_EVERY === 1 ? '' : `${PEER_EVERY}th `}round), concurrency 1, interleaved; p50 / p99\n`);
      console.log('| case | direct to fake (p50 / p99) | through the proxy (p50 / p99) | added (p50 / p99) |\n|---|---|---|---|');
      profileWindow[0] = now();
      const alloc = routerInspector ? await AllocSampler.connect(await routerInspector) : null;
      for (const [label, paths] of cases) {
        await alloc?.start();
        await interleaved(label, paths, label.endsWith('TTFT'));
        await alloc?.stop(label, WARM_UP + N);
      }
      alloc?.close();
      profileWindow[1] = now();
      await throughput(() => call(`${router}/chat/chat/completions`, h, chat(false)));
      console.log(`wall time from start: ${((performance.now() - startedAt) / 1000).toFixed(0)} s`);
    }
  } finally {
    const routerExit = new Promise((r) => routerProc.once('exit', r));
    for (const p of procs) p.kill('SIGTERM');
    await routerExit; // the CPU profile is written as the router exits
    await agent.close();
    await services.stop();
  }
  if (profDir) summariseProfile(profDir, profileWindow);
}

run().catch((err) => {
  console.error(err);
  process.exit(1);
});
