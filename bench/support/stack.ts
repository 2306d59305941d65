import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MongoClient, type Db } from 'mongodb';
import { startLocalServices, type LocalServices } from '../../infra/services/local-services.js';
import { freePort } from '../../infra/services/process.js';
import { newId } from '../../src/domain/ids.js';
import { AgentStore, type ScriptTurn } from '../../src/store/agents.js';

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
  /** CPU seconds (user + system) the local MongoDB-wire server has used so far; null with MONGODB_URL. */
  mongoCpuSeconds(): number | null;
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
 * Samples the MongoDB-wire server's CPU once a second while `fn` runs and
 * reports its average and its busiest second, in cores.
 */
export async function withServerCpu<T>(stack: Stack, fn: () => Promise<T>): Promise<{ result: T; cpu: { average: number; peak: number } | null }> {
  const first = stack.mongoCpuSeconds();
  if (first === null) return { result: await fn(), cpu: null };
  const started = Date.now();
  let last = { at: started, cpu: first };
  let peak = 0;
  const timer = setInterval(() => {
    const now = { at: Date.now(), cpu: stack.mongoCpuSeconds() ?? last.cpu };
    peak = Math.max(peak, (now.cpu - last.cpu) / ((now.at - last.at) / 1000));
    last = now;
  }, 1000);
  try {
    const result = await fn();
    const average = ((stack.mongoCpuSeconds() ?? last.cpu) - first) / ((Date.now() - started) / 1000);
    return { result, cpu: { average, peak: Math.max(peak, average) } };
  } finally {
    clearInterval(timer);
  }
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
};

function role(name: string, env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(process.execPath, [join(__dirname, '../../src/main.js'), name], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr!.on('data', (d: Buffer) => process.stderr.write(`[${name}] ${d}`));
  return child;
}

export async function startStack(opts: { workers?: number; env?: Record<string, string> } = {}): Promise<Stack> {
  // MONGODB_URL / REDIS_URL run the benchmark against those servers; TROUPE_LOCAL_MONGO picks the local one.
  const services = await startLocalServices({ mongodbUrl: process.env.MONGODB_URL, redisUrl: process.env.REDIS_URL, log: (m) => process.stderr.write(`[services] ${m}\n`) });
  process.stderr.write(`[bench] MongoDB-wire: ${services.mongoKind} ${services.mongodbUrl}\n`);
  const port = await freePort();
  const apiKey = `tr_sk_bench_${randomBytes(12).toString('hex')}`;
  const env = { ...process.env, MONGODB_URL: services.mongodbUrl, REDIS_URL: services.redisUrl, TROUPE_MONGODB_DB: 'bench', PORT: String(port), TROUPE_PUBLIC_URL: `http://127.0.0.1:${port}`, TROUPE_BOOTSTRAP_API_KEY: apiKey, LOG_LEVEL: 'warn', ...BENCH_LIMITS, ...opts.env };
  const children = [role('web', env), ...Array.from({ length: opts.workers ?? 1 }, () => role('worker', env))];
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200 && !(await fetch(`${base}/readyz`).catch(() => null))?.ok; i++) await new Promise((r) => setTimeout(r, 100));
  const mongo = new MongoClient(services.mongodbUrl, { directConnection: true });
  await mongo.connect();
  return {
    base,
    apiKey,
    services,
    db: mongo.db('bench'),
    mongoCpuSeconds() {
      const proc = services.processes.find((p) => p.name !== 'redis-server');
      return proc ? cpuSeconds(proc.pid) : null;
    },
    async close() {
      for (const c of children) c.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 1500));
      for (const c of children) c.kill('SIGKILL');
      await mongo.close();
      await services.stop();
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
