/**
 * Router benchmark (issue 6): the latency the router adds over calling the
 * fake upstream directly, measured at the client, interleaved in one run.
 *  - non-streaming chat completions at concurrency 1: p50/p99 of each path and of the difference
 *  - streaming: time to first token (first chunk carrying text), direct vs routed
 *  - the same through translation (chat in → anthropic upstream)
 *  - throughput through the router at rising concurrency, with p99
 *  - the same calls through LiteLLM's proxy and Portkey's gateway (unless --no-litellm / --no-portkey),
 *    interleaved with the router in the same rounds
 *  - --tracing: two more routers of the same build join the rounds, one tracing every call and one tracing one call
 *    in ten (OTLP http/protobuf to a sink in this process), beside the measured router with tracing off
 *  - --profile: the router process runs with --cpu-prof; its hot functions are summarised at the end
 *  - --no-rate-limit: the routing rate check is switched off, to show what its Redis round trip costs
 *  - --token-limits: the measured router checks and counts token limits (set out of reach), the baseline does not:
 *    with --baseline dist, the two rows show what the token-limit check adds
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
 * Files: processes.ts starts the stack, paths.ts holds each path's call and the case table, rounds.ts times the
 * interleaved rounds, throughput.ts the concurrency sweep, census.ts the --syscalls census.
 * Figures, not pass/fail.
 */
import { execFileSync } from 'node:child_process';
import { runSeconds } from '../support/stack.js';
import { AllocSampler } from './alloc-profile.js';
import { census } from './census.js';
import { caseTable, closeCalls, routedChat } from './paths.js';
import { startBenchStack } from './processes.js';
import { profileClock as now, summariseProfile } from './profile.js';
import { interleaved, WARM_UP, type Rounds } from './rounds.js';
import { throughput } from './throughput.js';
import { benchArgs } from '../support/args.js';

const USAGE = 'Usage: node dist/bench/router/run.js [--n 2000] [--seconds 2] [--no-litellm] [--no-portkey] [--no-rate-limit] [--token-limits] [--profile] [--baseline DIR [--baseline-node-args=\'<flags>\']] [--router-node-args=\'<flags>\'] [--no-floor] [--lean-net] [--tail] [--alloc] [--settle-ms 50] [--peer-every 5] [--syscalls N] [--tracing]';
const values = benchArgs(USAGE, { n: { type: 'string', default: '2000' }, seconds: { type: 'string', default: '2' }, 'no-litellm': { type: 'boolean', default: false }, 'no-portkey': { type: 'boolean', default: false }, 'no-rate-limit': { type: 'boolean', default: false }, 'token-limits': { type: 'boolean', default: false }, profile: { type: 'boolean', default: false }, baseline: { type: 'string' }, /* accepted so older commands still run; the floors are on unless --no-floor */ floor: { type: 'boolean', default: true }, 'no-floor': { type: 'boolean', default: false }, 'settle-ms': { type: 'string', default: '50' }, syscalls: { type: 'string', default: '0' }, 'baseline-node-args': { type: 'string', default: '' }, 'peer-every': { type: 'string', default: '5' }, 'lean-net': { type: 'boolean', default: false }, tail: { type: 'boolean', default: false }, alloc: { type: 'boolean', default: false }, 'router-node-args': { type: 'string', default: '' }, tracing: { type: 'boolean', default: false } }, ['n', 'seconds', 'settle-ms', 'syscalls', 'peer-every']);
const N = Number(values.n);
const SECONDS = Number(values.seconds);
/** With --profile, V8's sampling thread keeps the router from ever looking idle; a profile is for shares, not latency. */
const SETTLE_MS = values.profile ? 0 : Number(values['settle-ms']);
/** --syscalls N: instead of timing, count each proxy's and the upstream's syscalls over N calls per path (census.ts). */
const SYSCALLS = Number(values.syscalls);
/**
 * LiteLLM and Portkey take 15-30 ms a call against the router's 2, and with every path settled before its call
 * they were most of the run's wall time (13 minutes at --n 2000). They join every PEER_EVERY-th round, spread
 * evenly over the run (400 timed calls each at --n 2000, every 5th round since the lean floor joined and took the
 * default run past 6 minutes at every 4th), which is plenty for figures 2-15 times the router's.
 */
const PEER_EVERY = Math.max(1, Number(values['peer-every']));
/**
 * How often each path joins a round (every k-th; 1 when not named): the slow peers every PEER_EVERY-th, and the lean
 * floor every 2nd (1,000 timed calls at --n 2000 measure a floor well; in every round it took the default run to
 * 381 s, past the 6 minutes the run should stay under).
 */
const EVERY: Record<string, number> = { litellm: PEER_EVERY, portkey: PEER_EVERY, lean: 2 };
/** With --profile: when the interleaved rounds ran (warm-up included), the part of the profile that is summarised. */
const profileWindow: [number, number] = [0, Infinity];

async function run(): Promise<void> {
  const startedAt = performance.now();
  const stack = await startBenchStack({
    baseline: values.baseline,
    baselineNodeArgs: values['baseline-node-args'].split(' ').filter(Boolean),
    routerNodeArgs: values['router-node-args'].split(' ').filter(Boolean),
    profile: values.profile,
    alloc: values.alloc,
    noRateLimit: values['no-rate-limit'],
    tokenLimits: values['token-limits'],
    floors: !values['no-floor'],
    leanNet: values['lean-net'],
    litellm: !values['no-litellm'],
    portkey: !values['no-portkey'],
    tracing: values.tracing,
  });
  const { origins, routerProc } = stack;
  try {
    await stack.ready();
    console.log(`uptime: ${execFileSync('uptime').toString().trim()}`);
    const admin = { authorization: `Bearer ${stack.apiKey}`, 'content-type': 'application/json' };
    await fetch(`${stack.web}/v1/credentials/BENCH_KEY`, { method: 'PUT', headers: admin, body: JSON.stringify({ value: 'sk-bench' }) });
    const cand = (provider: string, url: string) => ({ model: `bench/${provider}`, provider, upstream_model: 'm', base_url: url, api_key_credential: 'BENCH_KEY' });
    for (const [id, provider, url] of [['chat', 'openai', `${origins.fake}/v1`], ['anth', 'anthropic', origins.fake]]) {
      const res = await fetch(`${stack.web}/v1/routers/${id}`, { method: 'PUT', headers: admin, body: JSON.stringify({ candidates: [cand(provider, url)] }) });
      if (!res.ok) throw new Error(`router ${id}: ${res.status} ${await res.text()}`);
    }
    const idle0 = runSeconds(routerProc.pid!) ?? NaN;
    await new Promise((r) => setTimeout(r, 2000));
    console.log(`router CPU while idle: ${(((runSeconds(routerProc.pid!) ?? NaN) - idle0) * 500).toFixed(1)} ms/s`);
    const cases = caseTable(origins, stack.routingKey);
    if (SYSCALLS > 0) await census(cases, stack.pathPids.direct!, SYSCALLS, stack.pathPids, profileWindow);
    else {
      console.log(`n=${N} per path (LiteLLM and Portkey ${Math.ceil(N / PEER_EVERY)}: every ${PEER_EVERY === 1 ? '' : `${PEER_EVERY}th `}round; the lean floor ${Math.ceil(N / 2)}: every 2nd), concurrency 1, interleaved; p50 / p99\n`);
      console.log('| case | direct to fake (p50 / p99) | through the proxy (p50 / p99) | added (p50 / p99) |\n|---|---|---|---|');
      const rounds: Rounds = { n: N, settleMs: SETTLE_MS, every: EVERY, tail: values.tail, routerOrigin: origins.router, cpuPids: stack.cpuPids, pathPids: stack.pathPids };
      profileWindow[0] = now();
      const alloc = stack.routerInspector ? await AllocSampler.connect(await stack.routerInspector) : null;
      for (const [label, paths] of cases) {
        await alloc?.start();
        await interleaved(rounds, label, paths, label.endsWith('TTFT'));
        await alloc?.stop(label, WARM_UP + N);
      }
      alloc?.close();
      profileWindow[1] = now();
      await throughput(routedChat(origins.router, stack.routingKey), SECONDS);
      console.log(`wall time from start: ${((performance.now() - startedAt) / 1000).toFixed(0)} s`);
    }
  } finally {
    await stack.stop();
    await closeCalls();
  }
  if (stack.profDir) summariseProfile(stack.profDir, profileWindow);
}

run().catch((err) => {
  console.error(err);
  process.exit(1);
});
