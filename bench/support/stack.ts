import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient, type Db } from 'mongodb';
import { noRoundTrips, type RoundTrips } from '../../src/lib/metrics/round-trips.js';
import { startLocalServices, type LocalServices } from '../../infra/services/local-services.js';
import type { MongoKind } from '../../infra/services/mongo-wire.js';
import { freePort } from '../../infra/services/process.js';
import { newId } from '../../src/domain/ids.js';
import { AgentStore } from '../../src/store/agents.js';
import type { ScriptTurn } from '../../src/domain/agent.js';

/**
 * What the data-plane benchmarks share: local Redis + MongoDB-wire server,
 * a `web` process and `worker` processes as separate OS processes (as they
 * would be deployed), and a scripted agent written straight into the store.
 */
export interface Stack {
  base: string;
  apiKey: string;
  services: LocalServices;
  db: Db;
  /** The worker processes' MongoDB and Redis round trips so far, summed (written twice a second). */
  roundTrips(): RoundTrips;
  /** The web process's round trips so far (auth, idempotency, the ask). */
  webRoundTrips(): RoundTrips;
  /** The stack's processes by role: web, worker1.., and the local servers it started (by kind). */
  pids(): Record<string, number>;
  close(): Promise<void>;
}

/** utime + stime of a process, from /proc/<pid>/stat, in seconds (all threads). */
export function cpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

/**
 * Time the threads of a process spent runnable but waiting for a core, from
 * /proc/<pid>/task/<tid>/schedstat, in seconds (threads that ended are not counted).
 */
export function waitSeconds(pid: number): number | null {
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[1]);
    return ns / 1e9;
  } catch {
    return null;
  }
}

/** Time the threads of a process spent on a core, from the same schedstat files, in seconds (nanosecond resolution). */
export function runSeconds(pid: number): number | null {
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    return ns / 1e9;
  } catch {
    return null;
  }
}

export interface CpuFigures {
  /** Cores used on average over the measured phase. */
  average: number;
  /** Cores used in the busiest one-second sample. */
  peak: number;
  /** Cores' worth of time the process was runnable but waited for a core, on average (the machine's contention). */
  waiting: number;
}

/**
 * Samples the CPU of every process of the stack (and of this client) once a
 * second while `fn` runs: a coarse profile of where the machine's time went.
 */
export async function withCpu<T>(stack: Stack, fn: () => Promise<T>): Promise<{ result: T; cpu: Record<string, CpuFigures> }> {
  const read = (): Record<string, number> => {
    const own = process.cpuUsage();
    const out: Record<string, number> = { client: (own.user + own.system) / 1e6 };
    for (const [name, pid] of Object.entries(stack.pids())) {
      const c = cpuSeconds(pid);
      if (c !== null) out[name] = c;
    }
    return out;
  };
  const waits = (): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const [name, pid] of Object.entries({ client: process.pid, ...stack.pids() })) {
      const w = waitSeconds(pid);
      if (w !== null) out[name] = w;
    }
    return out;
  };
  const started = Date.now();
  const first = read();
  const firstWait = waits();
  let last = { at: started, cpu: first };
  const peak: Record<string, number> = {};
  const timer = setInterval(() => {
    const now = { at: Date.now(), cpu: read() };
    const dt = (now.at - last.at) / 1000;
    for (const k of Object.keys(now.cpu)) if (k in last.cpu) peak[k] = Math.max(peak[k] ?? 0, (now.cpu[k] - last.cpu[k]) / dt);
    last = now;
  }, 1000);
  try {
    const result = await fn();
    const end = read();
    const endWait = waits();
    const seconds = (Date.now() - started) / 1000;
    const cpu: Record<string, CpuFigures> = {};
    for (const k of Object.keys(first)) {
      if (!(k in end)) continue;
      const average = (end[k] - first[k]) / seconds;
      cpu[k] = { average, peak: Math.max(peak[k] ?? 0, average), waiting: ((endWait[k] ?? 0) - (firstWait[k] ?? 0)) / seconds };
    }
    return { result, cpu };
  } finally {
    clearInterval(timer);
  }
}

/** One line: `name average/peak (waiting w)` per process, in cores. */
export function formatCpu(cpu: Record<string, CpuFigures>): string {
  return Object.entries(cpu)
    .map(([k, v]) => `${k} ${v.average.toFixed(2)}/${v.peak.toFixed(2)} (waiting ${v.waiting.toFixed(2)})`)
    .join(', ');
}

/**
 * Benchmarks drive one org far past the default request rates on purpose. The
 * limits are raised, not switched off, so their Redis round trip stays in the
 * measured path as in production.
 */
export const BENCH_LIMITS: Record<string, string> = {
  TROUPE_RATE_LIMIT_API_PER_MIN: '1000000000',
  TROUPE_RATE_LIMIT_API_KEY_PER_MIN: '1000000000',
  TROUPE_RATE_LIMIT_ROUTING_PER_MIN: '1000000000',
  TROUPE_RATE_LIMIT_ROUTING_KEY_PER_MIN: '1000000000',
  TROUPE_MAX_RUNNING_SESSIONS: '1000000000',
  // The ledger bench holds 5,000 idle streams of one key.
  TROUPE_SSE_MAX_STREAMS_PER_ORG: '0',
  TROUPE_SSE_MAX_STREAMS_PER_KEY: '0',
};

function sum(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  const out = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = (out[k] ?? 0) + v;
  return out;
}

function readRoundTrips(files: string[]): RoundTrips {
  const total = noRoundTrips();
  for (const f of files) {
    if (!existsSync(f)) continue;
    const c = JSON.parse(readFileSync(f, 'utf8')) as RoundTrips;
    total.mongo = { total: total.mongo.total + c.mongo.total, commands: sum(total.mongo.commands, c.mongo.commands), shapes: sum(total.mongo.shapes, c.mongo.shapes) };
    total.redis = { total: total.redis.total + c.redis.total, commands: sum(total.redis.commands, c.redis.commands), pipelines: total.redis.pipelines + c.redis.pipelines, fetches: sum(total.redis.fetches, c.redis.fetches) };
  }
  return total;
}

/**
 * Redis traffic a worker makes per queue per interval, not per message: the
 * stalled-job check and lock renewals (one each per queue every half lock),
 * and the blocking wait of an idle queue. Per message they shrink as
 * throughput grows, so they are reported apart from the per-message work.
 */
const TIMED = ['evalsha moveStalledJobsToWait', 'evalsha extendLocks', 'evalsha extendLock', 'bzpopmin'];

/** The Redis round trips between two readings that are not TIMED. */
export function redisWork(before: RoundTrips, after: RoundTrips): number {
  const timed = TIMED.reduce((n, k) => n + (after.redis.commands[k] ?? 0) - (before.redis.commands[k] ?? 0), 0);
  return after.redis.total - before.redis.total - timed;
}

/** What changed between two readings, per `per` units (e.g. per message). */
export function roundTripsPer(before: RoundTrips, after: RoundTrips, per: number): string {
  const diff = (a: Record<string, number>, b: Record<string, number>) =>
    Object.entries(b).map(([k, v]) => [k, v - (a[k] ?? 0)] as const).filter(([, v]) => v > 0).sort((x, y) => y[1] - x[1]).map(([k, v]) => `${k} ${(v / per).toFixed(2)}`).join(', ');
  const mongo = (after.mongo.total - before.mongo.total) / per;
  const redis = (after.redis.total - before.redis.total) / per;
  return `MongoDB ${mongo.toFixed(2)} (${diff(before.mongo.commands, after.mongo.commands)}); Redis ${redis.toFixed(2)} round trips, ${(redisWork(before, after) / per).toFixed(2)} without the per-interval ones (${TIMED.join(', ')}), of which pipelines ${((after.redis.pipelines - before.redis.pipelines) / per).toFixed(2)} (commands: ${diff(before.redis.commands, after.redis.commands)})`;
}

/**
 * BullMQ's fetches between two readings, per `per` units, by queue kind and what they found: how many of a worker's
 * round trips go to queues that had no job for it (`moveToActive …: empty`, `bzpopmin …: marker` that led to one).
 */
export function fetchesPer(before: RoundTrips, after: RoundTrips, per: number): string {
  const a = before.redis.fetches;
  const d = Object.entries(after.redis.fetches).map(([k, v]) => [k, v - (a[k] ?? 0)] as const).filter(([, v]) => v > 0);
  const empty = d.filter(([k]) => k.startsWith('moveToActive') && k.endsWith(': empty')).reduce((n, [, v]) => n + v, 0);
  const markers = d.filter(([k]) => k.startsWith('bzpopmin') && k.endsWith(': marker')).reduce((n, [, v]) => n + v, 0);
  return `empty moveToActive ${(empty / per).toFixed(2)}, bzpopmin woken by a marker ${(markers / per).toFixed(2)} (${d.sort(([x], [y]) => x.localeCompare(y)).map(([k, v]) => `${k} ${(v / per).toFixed(2)}`).join(', ')})`;
}

/** MongoDB statements between two readings by filter shape, per `per` units: which queries could scan on mongo-java-server. */
export function queryShapesPer(before: RoundTrips, after: RoundTrips, per: number): string {
  const a = before.mongo.shapes;
  return Object.entries(after.mongo.shapes).map(([k, v]) => [k, v - (a[k] ?? 0)] as const).filter(([, v]) => v > 0)
    .sort((x, y) => y[1] - x[1]).map(([k, v]) => `${k} ${(v / per).toFixed(2)}`).join('; ');
}

function role(name: string, env: NodeJS.ProcessEnv, nodeArgs: string[] = []): ChildProcess {
  const child = spawn(process.execPath, [...nodeArgs, join(__dirname, '../../src/main.js'), name], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr!.on('data', (d: Buffer) => process.stderr.write(`[${name}] ${d}`));
  return child;
}

export async function startStack(opts: { workers?: number; env?: Record<string, string>; mongoKind?: MongoKind; mongoMemory?: boolean } = {}): Promise<Stack> {
  // MONGODB_URL / REDIS_URL run the benchmark against those servers; `mongoKind` (or TROUPE_LOCAL_MONGO) picks the local one.
  const services = await startLocalServices({ mongodbUrl: process.env.MONGODB_URL, redisUrl: process.env.REDIS_URL, mongoKind: opts.mongoKind, mongoMemory: opts.mongoMemory, log: (m) => process.stderr.write(`[services] ${m}\n`) });
  process.stderr.write(`[bench] MongoDB-wire: ${services.mongoKind} ${services.mongodbUrl}\n`);
  const port = await freePort();
  const apiKey = `tr_sk_bench_${randomBytes(12).toString('hex')}`;
  const env = { ...process.env, MONGODB_URL: services.mongodbUrl, REDIS_URL: services.redisUrl, TROUPE_MONGODB_DB: 'bench', PORT: String(port), TROUPE_PUBLIC_URL: `http://127.0.0.1:${port}`, TROUPE_BOOTSTRAP_API_KEY: apiKey, LOG_LEVEL: 'warn', ...BENCH_LIMITS, ...opts.env };
  const counters = Array.from({ length: opts.workers ?? 1 }, (_, i) => join(tmpdir(), `troupe-bench-rt-${process.pid}-${i}.json`));
  // BENCH_CPU_PROF_DIR: the web and worker processes write a V8 CPU profile there when they stop (for the ceiling's explanation).
  const profile = process.env.BENCH_CPU_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF_DIR}`] : [];
  const webCounter = join(tmpdir(), `troupe-bench-rt-${process.pid}-web.json`);
  const children = [role('web', { ...env, TROUPE_ROUND_TRIPS_FILE: webCounter }, profile), ...counters.map((file) => role('worker', { ...env, TROUPE_ROUND_TRIPS_FILE: file }, profile))];
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200 && !(await fetch(`${base}/readyz`).catch(() => null))?.ok; i++) await new Promise((r) => setTimeout(r, 100));
  const mongo = new MongoClient(services.mongodbUrl, { directConnection: true });
  await mongo.connect();
  return {
    base,
    apiKey,
    services,
    db: mongo.db('bench'),
    roundTrips: () => readRoundTrips(counters),
    webRoundTrips: () => readRoundTrips([webCounter]),
    pids() {
      const out: Record<string, number> = {};
      for (const p of services.processes) out[p.name] = p.pid;
      children.forEach((c, i) => (out[i === 0 ? 'web' : `worker${i}`] = c.pid ?? -1));
      return out;
    },
    async close() {
      for (const c of children) c.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 1500));
      for (const c of children) c.kill('SIGKILL');
      await mongo.close();
      await services.stop();
      for (const f of [...counters, webCounter]) for (const p of [f, `${f}.tmp`]) rmSync(p, { force: true });
    },
  };
}

export async function scriptedAgent(db: Db, turns: ScriptTurn[]): Promise<string> {
  const org = (await db.collection<{ _id: string; name: string }>('orgs').findOne({ name: 'default' }))!;
  const manifest = { name: 'bench', sdk: 'troupe-js@1' as const, entrypoint: 'a.js:a', sandbox: { secrets: [], internet_access: false }, custom_tools: [], llm_options: [{ id: 'main', provider: 'scripted' as const, script: 's.json' }] };
  const { agent } = await new AgentStore(db).create({ id: newId('agent'), orgId: org._id, name: 'bench' }, { id: newId('version'), snapshotId: newId('snapshot'), content: { manifest, llm_options: manifest.llm_options, tools: [], scripts: { main: { turns } }, entrypoint: manifest.entrypoint } });
  return agent._id;
}

/** Runs `fn` over `items` with at most `n` in flight. */
export async function pool<T>(items: T[], n: number, fn: (t: T) => Promise<void>): Promise<void> {
  let i = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (i < items.length) await fn(items[i++]);
  }));
}
