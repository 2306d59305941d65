/**
 * Ledger benchmark (issue 4). Starts Redis + the MongoDB-wire server, a web
 * process and a worker process, then measures from a client on this machine:
 *  - end-to-end ledger throughput (append -> visible on SSE) across N sessions
 *  - user.message POST latency p50/p99
 *  - SSE delivery latency from append to client p50/p99
 *  - RSS of the web process holding M idle SSE streams
 * MONGODB_URL runs it against that server; TROUPE_LOCAL_MONGO picks the local one;
 * `--stores mongo-java-server,ferretdb` runs the whole measurement once per local
 * server, one after the other in the same invocation, and ends with a table
 * (`mongo-java-server:memory` is its memory backend instead of the H2 file).
 * `--warmup N` first runs N messages (sync, on sessions of their own) through the same turn and leaves them out of
 * every figure: a fresh store's JVM and the Node processes compile their hot paths in the first seconds, which a
 * run of a few seconds would otherwise mostly measure. `--warmup 0` measures from cold. N is per worker process (the
 * shards split the warm-up's sessions over them, and each process compiles its own code): `--workers 2` runs 2N, so
 * each worker is as warm as the one of a 1-worker run.
 * `--census` adds where the CPU goes (bench/ledger/census.ts): each process's CPU by thread, its syscalls and context
 * switches, and Redis's commands by name, over an idle window after the warm-up (`--idle 10` seconds, nothing sent:
 * per second) and over the measured window (per event).
 * `--scale-pairs N` asks the scale-out question (bench/ledger/pairs.ts): N pairs of runs, 1 worker and 2 workers
 * back to back with the order swapped every pair, each run on a fresh stack; prints each pair, both means, and the
 * mean paired difference with its 95% confidence interval. Both runs of a pair warm up with the same 2N messages
 * (N per process of the 2-worker run, 2N for the lone worker), so the two stacks hold the same data when measured:
 * with N per process, the 2-worker run's store held twice the 1-worker run's documents and its JVM twice the heap.
 * `--pairs-file f` adds the pairs of earlier invocations recorded in f, and records this one's there.
 * `--tracing off,100,10` measures once per tracing mode, in turn, each on a fresh stack (a list may repeat modes, to
 * alternate them): `off` exports nothing, a percentage traces that share of messages (parent-based ratio sampler)
 * and exports them over OTLP http/protobuf to a sink in this process; the closing table has a row per run.
 * Figures, not pass/fail.
 */
import { setMaxListeners } from 'node:events';
import { request } from 'undici';
import { fmt, summary } from '../support/percentiles.js';
import type { MongoKind } from '../../infra/services/mongo-wire.js';
import { fetchesPer, formatCpu, pool, queryShapesPer, redisWork, roundTripsPer, scriptedAgent, startStack, withCpu, type CpuFigures } from '../support/stack.js';
import { useKeepAliveClient } from '../support/http-client.js';
import { stream } from '../support/sse.js';
import { censusReport, perfRecord, reading } from './census.js';
import { firstOf, loadPairs, pairsReport, savePair, type Pair } from './pairs.js';
import { Redis } from 'ioredis';
import { benchArgs } from '../support/args.js';
import { startOtlpSink, tracingEnv, type OtlpSink } from '../support/otlp-sink.js';

useKeepAliveClient();

const USAGE = 'Usage: node dist/bench/ledger/run.js [--sessions 1000] [--warmup 1000] [--streams 5000] [--concurrency 64] [--workers 1] [--stores a,b] [--census] [--idle 10] [--scale-pairs N [--pairs-file f]] [--tracing off,100,10]';
const values = benchArgs(USAGE, { sessions: { type: 'string', default: '1000' }, warmup: { type: 'string', default: '1000' }, streams: { type: 'string', default: '5000' }, concurrency: { type: 'string', default: '64' }, workers: { type: 'string', default: '1' }, stores: { type: 'string', default: '' }, census: { type: 'boolean', default: false }, idle: { type: 'string', default: '10' }, 'scale-pairs': { type: 'string', default: '0' }, 'pairs-file': { type: 'string' }, tracing: { type: 'string', default: '' } }, ['sessions', 'warmup', 'streams', 'concurrency', 'workers', 'idle', 'scale-pairs']);
const SESSIONS = Number(values.sessions);
const STREAMS = Number(values.streams);
const CONCURRENCY = Number(values.concurrency);
/** Warm-up messages per worker process: each compiles its own code. */
const WARMUP_PER_WORKER = Number(values.warmup);

async function rssOf(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^troupe_process_resident_memory_bytes\S* (\d+)/m.exec(text)?.[1] ?? NaN);
}

/** One run's figures, for the closing table. */
interface Row {
  store: string;
  eventsPerSecond: number;
  /** Events seen out of order, and events never seen (within the run's 300 s bound). */
  gaps: number;
  missing: number;
  post: string;
  delivery: string;
  mongoPerMessage: number;
  redisPerMessage: number;
  /** Without the per-interval traffic (stalled checks, lock renewals, idle waits). */
  redisWorkPerMessage: number;
  cpu: Record<string, CpuFigures>;
}

/** Runs `n` messages at the run's concurrency, each on a new session, and waits for their turns to end. */
async function warmUp(base: string, auth: Record<string, string>, agentId: string, n: number): Promise<void> {
  const SYNC = JSON.stringify({ parts: [{ type: 'text', text: 'hi' }] });
  await pool(Array.from({ length: n }, (_, i) => i), CONCURRENCY, async () => {
    const created = await request(`${base}/v1/agents/${agentId}/sessions`, { method: 'POST', headers: auth, body: '{}' });
    const { id } = (await created.body.json()) as { id: string };
    const r = await request(`${base}/v1/sessions/${id}/messages/sync`, { method: 'POST', headers: auth, body: SYNC });
    await r.body.arrayBuffer();
  });
}

async function measure(store: string | undefined, workers: number, warmup = WARMUP_PER_WORKER * workers, tracing?: { mode: string; sink: OtlpSink }): Promise<Row> {
  const [mongoKind, backend] = (store?.split(':') ?? []) as [MongoKind | undefined, string | undefined];
  const traced = tracing ? tracingEnv(tracing.mode, tracing.sink.url) : {};
  const stack = await startStack({ workers, env: { TROUPE_SESSION_SHARDS: '64', ...traced }, mongoKind, mongoMemory: backend === 'memory' });
  const { base, apiKey } = stack;
  const abort = new AbortController();
  // Every stream listens on it.
  setMaxListeners(0, abort.signal);
  try {
    const agent = { _id: await scriptedAgent(stack.db, [{ text: 'ok' }]) };
    const auth = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
    if (warmup > 0) {
      const t = Date.now();
      await warmUp(base, auth, agent._id, warmup);
      console.log(`warm-up: ${warmup} messages in ${((Date.now() - t) / 1000).toFixed(1)} s, left out of every figure below`);
    }
    const redis = values.census ? new Redis(stack.services.redisUrl) : null;
    if (redis) {
      // Let the warm-up's last turns and timers settle, then read an idle window: what the stack costs per second doing nothing.
      await new Promise((r) => setTimeout(r, 3000));
      const idleSeconds = Number(values.idle);
      const a = await reading(stack.pids(), redis);
      await new Promise((r) => setTimeout(r, idleSeconds * 1000));
      console.log(`census, idle for ${idleSeconds} s (per second):\n${censusReport(a, await reading(stack.pids(), redis), idleSeconds, 's')}`);
    }
    const sessions: string[] = [];
    await pool(Array.from({ length: SESSIONS }, (_, i) => i), CONCURRENCY, async () => {
      const r = await fetch(`${base}/v1/agents/${agent._id}/sessions`, { method: 'POST', headers: auth, body: '{}' });
      sessions.push(((await r.json()) as { id: string }).id);
    });
    const delivery: number[] = [];
    let seen = 0;
    const EVENTS_PER_MESSAGE = 7;
    const MESSAGE = JSON.stringify({ type: 'user.message', content: [{ type: 'text', text: 'hi' }] });
    const expected = SESSIONS * EVENTS_PER_MESSAGE;
    let allSeen!: () => void;
    const finished = new Promise<void>((r) => (allSeen = r));
    // Gapless SSE: each stream must see 1, 2, 3, ... in order (a repeat is dropped by the server, never sent).
    const last = new Map<string, number>();
    let gaps = 0;
    await pool(sessions, 200, (id) => stream(`${base}/v1/sessions/${id}/stream`, apiKey, (seq, createdAt) => {
      if (seq !== (last.get(id) ?? 0) + 1) gaps++;
      last.set(id, seq);
      delivery.push(Date.now() - createdAt);
      if (++seen === expected) allSeen();
    }, abort.signal));
    const post: number[] = [];
    const countsBefore = stack.roundTrips();
    const webBefore = stack.webRoundTrips();
    const started = Date.now();
    const stopPerf = await perfRecord(Object.fromEntries(Object.entries(stack.pids()).filter(([k]) => k.startsWith('worker'))), process.env.BENCH_PERF_DIR);
    const censusBefore = redis ? await reading(stack.pids(), redis) : null;
    const { cpu } = await withCpu(stack, async () => {
      await pool(sessions, CONCURRENCY, async (id) => {
        const t = performance.now();
        const r = await request(`${base}/v1/sessions/${id}/events`, { method: 'POST', headers: auth, body: MESSAGE });
        await r.body.arrayBuffer();
        post.push(performance.now() - t);
      });
      await Promise.race([finished, new Promise((r) => setTimeout(r, 300_000))]);
    });
    const seconds = (Date.now() - started) / 1000;
    await stopPerf();
    if (redis && censusBefore) {
      console.log(`census, measured window (per event, ${seen} events):\n${censusReport(censusBefore, await reading(stack.pids(), redis), seen, 'event')}`);
      redis.disconnect();
    }
    abort.abort();
    // The workers write their counts twice a second.
    await new Promise((r) => setTimeout(r, 1200));
    const countsAfter = stack.roundTrips();
    const webAfter = stack.webRoundTrips();
    const p = summary(post);
    const d = summary(delivery);
    console.log(`sessions=${SESSIONS} events seen on SSE=${seen}/${expected} in ${seconds.toFixed(1)} s -> ${(seen / seconds).toFixed(0)} events/s, ${gaps} out-of-order or missing`);
    console.log(`user.message POST latency (concurrency ${CONCURRENCY}): p50 ${fmt(p.p50)}, p99 ${fmt(p.p99)}, max ${fmt(p.max)}`);
    console.log(`SSE delivery latency append->client: p50 ${fmt(d.p50)}, p99 ${fmt(d.p99)}, max ${fmt(d.max)}`);
    console.log(`worker round trips per user message: ${roundTripsPer(countsBefore, countsAfter, SESSIONS)}`);
    console.log(`worker BullMQ fetches per user message: ${fetchesPer(countsBefore, countsAfter, SESSIONS)}`);
    console.log(`web round trips per user message: ${roundTripsPer(webBefore, webAfter, SESSIONS)}`);
    console.log(`MongoDB statements per user message by filter shape, worker: ${queryShapesPer(countsBefore, countsAfter, SESSIONS)}`);
    console.log(`MongoDB statements per user message by filter shape, web: ${queryShapesPer(webBefore, webAfter, SESSIONS)}`);
    console.log(`CPU while messages ran, cores average/busiest second (average waiting for a core): ${formatCpu(cpu)}`);
    if (tracing) console.log(`tracing ${tracing.mode}: the sink has received ${tracing.sink.requests()} OTLP requests, ${(tracing.sink.bytes() / 1024).toFixed(0)} KiB, so far`);
    const row: Row = {
      store: (store ?? stack.services.mongoKind) + (tracing ? `, tracing ${tracing.mode}${tracing.mode === 'off' ? '' : '%'}` : ''),
      eventsPerSecond: seen / seconds,
      gaps,
      missing: expected - seen,
      post: `${fmt(p.p50)} / ${fmt(p.p99)}`,
      delivery: `${fmt(d.p50)} / ${fmt(d.p99)}`,
      mongoPerMessage: (countsAfter.mongo.total - countsBefore.mongo.total) / SESSIONS,
      redisPerMessage: (countsAfter.redis.total - countsBefore.redis.total) / SESSIONS,
      redisWorkPerMessage: redisWork(countsBefore, countsAfter) / SESSIONS,
      cpu,
    };
    if (STREAMS === 0) return row;
    const idle = new AbortController();
    setMaxListeners(0, idle.signal);
    const rssBefore = await rssOf(base);
    await pool(Array.from({ length: STREAMS }, (_, i) => sessions[i % sessions.length]), 200, (id) => stream(`${base}/v1/sessions/${id}/stream?last_event_id=${id}:${EVENTS_PER_MESSAGE}`, apiKey, () => undefined, idle.signal));
    await new Promise((r) => setTimeout(r, 2000));
    const rssAfter = await rssOf(base);
    console.log(`web RSS with ${STREAMS} idle SSE streams: ${(rssAfter / 2 ** 20).toFixed(0)} MiB (before opening them: ${(rssBefore / 2 ** 20).toFixed(0)} MiB)`);
    idle.abort();
    return row;
  } finally {
    abort.abort();
    await stack.close();
  }
}

const cores = (c: CpuFigures | undefined) => (c ? `${c.average.toFixed(2)} / ${c.peak.toFixed(2)} (waiting ${c.waiting.toFixed(2)})` : 'n/a');

/** `--scale-pairs N`: N more pairs of 1- and 2-worker runs on the default store, then the paired judgement. */
async function scalePairs(n: number): Promise<void> {
  const file = values['pairs-file'];
  const pairs = loadPairs(file);
  for (let i = 0; i < n; i++) {
    const first = firstOf(pairs.length);
    const eps: Record<number, number> = {};
    for (const workers of first === 1 ? [1, 2] : [2, 1]) {
      console.log(`\npair ${pairs.length + 1}, ${workers} worker${workers === 2 ? 's' : ''}:`);
      eps[workers] = (await measure(undefined, workers, WARMUP_PER_WORKER * 2)).eventsPerSecond;
    }
    const pair: Pair = { one: eps[1], two: eps[2], first };
    pairs.push(pair);
    savePair(file, pair);
  }
  console.log(`\nscale-out 1 -> 2 worker processes, ${pairs.length} pairs${file ? ` (with ${file})` : ''}:\n${pairsReport(pairs)}`);
}

async function main(): Promise<void> {
  if (Number(values['scale-pairs']) > 0) return scalePairs(Number(values['scale-pairs']));
  const stores = values.stores ? values.stores.split(',') : [undefined];
  const rows: Row[] = [];
  if (values.tracing) {
    const sink = await startOtlpSink();
    try {
      for (const mode of values.tracing.split(',')) {
        console.log(`\ntracing ${mode}:`);
        rows.push(await measure(stores[0], Number(values.workers), WARMUP_PER_WORKER * Number(values.workers), { mode, sink }));
      }
    } finally {
      await sink.close();
    }
  } else for (const store of stores) rows.push(await measure(store, Number(values.workers)));
  console.log(`\n| store | events/s | out of order / missing | POST p50 / p99 | SSE p50 / p99 | round trips per message (MongoDB / Redis, Redis without per-interval) | store CPU avg / peak | worker CPU avg / peak |`);
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    const worker = Object.entries(r.cpu).filter(([k]) => k.startsWith('worker')).map(([, v]) => v);
    const workerCpu = worker.length ? { average: worker.reduce((a, v) => a + v.average, 0), peak: worker.reduce((a, v) => a + v.peak, 0), waiting: worker.reduce((a, v) => a + v.waiting, 0) } : undefined;
    console.log(`| ${r.store} | ${r.eventsPerSecond.toFixed(0)} | ${r.gaps} / ${r.missing} | ${r.post} | ${r.delivery} | ${r.mongoPerMessage.toFixed(2)} / ${r.redisPerMessage.toFixed(2)}, ${r.redisWorkPerMessage.toFixed(2)} | ${cores(r.cpu[r.store.split(/[:,]/)[0]])} | ${cores(workerCpu)} |`);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
