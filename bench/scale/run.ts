/**
 * Scale-out benchmark (issue 15): the same load against
 *   one     one process running web + worker + webhooks, on one redis-server
 *   one-c   the same single process on a local 3-master Redis Cluster
 *   fleet   2 web, 3 worker and 1 webhooks processes on the same cluster
 * in one sitting, on one MongoDB-wire server (a fresh database per layout).
 *
 * Load: S sessions, each sent M user messages one after another (the next
 * once the POST answered), C sessions at a time, POSTs alternating between
 * the web processes. Reports ledger events/s from first POST to the last
 * message completed, CPU per message of the Troupe processes and of the
 * servers, MongoDB requests per message (counted by a wire proxy), and checks
 * every ledger: gapless sequence numbers, user messages in the order sent.
 * Creating the sessions is measured apart (per session: ledger events, CPU,
 * MongoDB requests), for sizing session starts.
 *
 * `--calibrate` adds a small pass per Redis kind at concurrency 1 with
 * MONITOR on, counting Redis client commands per message apart from the
 * commands BullMQ's Lua scripts run inside Redis.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MongoClient, type Db } from 'mongodb';
import { parseRedisTarget } from '../../src/lib/redis/target.js';
import { startLocalServices, type LocalServices } from '../../infra/services/local-services.js';
import { freePort } from '../../infra/services/process.js';
import { BENCH_LIMITS, pool, scriptedAgent } from '../support/stack.js';
import { useKeepAliveClient } from '../support/http-client.js';
import { RedisMonitor } from './redis-monitor.js';
import { WireCounter } from './wire-counter.js';
import { benchArgs } from '../support/args.js';

useKeepAliveClient();

const USAGE = 'Usage: node dist/bench/scale/run.js [--sessions 300] [--messages 3] [--concurrency 48] [--layouts one,one-c,fleet] [--calibrate]';
const values = benchArgs(
  USAGE,
  {
    sessions: { type: 'string', default: '300' },
    messages: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '48' },
    layouts: { type: 'string', default: 'one,one-c,fleet' },
    calibrate: { type: 'boolean', default: false },
  },
  ['sessions', 'messages', 'concurrency'],
);

type Layout = { name: string; cluster: boolean; processes: string[][] };
const LAYOUTS: Record<string, Layout> = {
  one: { name: 'one process, one redis-server', cluster: false, processes: [['web', 'worker', 'webhooks']] },
  'one-c': { name: 'one process, Redis Cluster', cluster: true, processes: [['web', 'worker', 'webhooks']] },
  fleet: { name: '2 web + 3 worker + 1 webhooks, Redis Cluster', cluster: true, processes: [['web'], ['web'], ['worker'], ['worker'], ['worker'], ['webhooks']] },
};

const TICKS = 100; // USER_HZ on Linux
function cpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS;
  } catch {
    return 0;
  }
}

interface Proc {
  child: ChildProcess;
  url?: string;
}

async function startProc(roles: string[], env: NodeJS.ProcessEnv): Promise<Proc> {
  const port = roles.includes('web') ? await freePort() : 0;
  const child = spawn(process.execPath, [join(__dirname, '../../src/main.js'), ...roles], {
    env: { ...env, ...(port ? { PORT: String(port), TROUPE_PUBLIC_URL: `http://127.0.0.1:${port}` } : {}) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr!.on('data', (d: Buffer) => process.stderr.write(`[${roles.join('+')}] ${d}`));
  if (port) for (let i = 0; i < 300 && !(await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null))?.ok; i++) await new Promise((r) => setTimeout(r, 100));
  else await new Promise((r) => setTimeout(r, 3000));
  return { child, url: port ? `http://127.0.0.1:${port}` : undefined };
}

interface Result {
  layout: string;
  messages: number;
  events: number;
  seconds: number;
  violations: number;
  /** POSTs answered 503/409 and retried with the same Idempotency-Key. */
  retries: number;
  /** CPU of the Troupe processes during the run, summed by role. */
  roleCpuMs: Record<string, number>;
  redisCpuMs: number;
  mongoCpuMs: number;
  mongoRequests: number;
  redis?: { client: number; lua: number };
  /** CPU ms per second with no load (BullMQ polling, lock renewals, stalled-job checks), measured for 5 s before. */
  idle: { troupe: number; redis: number; mongo: number };
  /** Creating the sessions, before the messages: per-session costs. */
  creation: { sessions: number; seconds: number; events: number; troupeCpuMs: number; mongoCpuMs: number; mongoRequests: number; redisCpuMs: number };
}

async function runLayout(key: string, services: { single: LocalServices; cluster: LocalServices }, mongo: MongoClient, opts: { sessions: number; messages: number; concurrency: number; monitor: boolean }): Promise<Result> {
  const layout = LAYOUTS[key];
  const svc = layout.cluster ? services.cluster : services.single;
  const mongoTarget = new URL(svc.mongodbUrl);
  const counter = await WireCounter.start({ host: mongoTarget.hostname, port: Number(mongoTarget.port) });
  const dbName = `bench_scale_${randomBytes(4).toString('hex')}`;
  const apiKey = `tr_sk_bench_${randomBytes(12).toString('hex')}`;
  const env = { ...process.env, MONGODB_URL: `mongodb://127.0.0.1:${counter.port}/`, REDIS_URL: svc.redisUrl, TROUPE_MONGODB_DB: dbName, TROUPE_BOOTSTRAP_API_KEY: apiKey, TROUPE_REDIS_PREFIX: dbName, LOG_LEVEL: 'warn', ...BENCH_LIMITS };
  const procs: Proc[] = [];
  for (const roles of layout.processes) procs.push(await startProc(roles, env));
  const webs = procs.filter((p) => p.url).map((p) => p.url!);
  const db: Db = mongo.db(dbName);
  const redisPorts = parseRedisTarget(svc.redisUrl).nodes.map((n) => n.port);
  const redisPids = svc.processes.filter((p) => p.name.startsWith('redis')).map((p) => p.pid);
  const mongoPids = services.single.processes.filter((p) => !p.name.startsWith('redis')).map((p) => p.pid);
  const sum = (pids: number[]) => pids.reduce((a, p) => a + cpuMs(p), 0);
  const byRole = () => {
    const out: Record<string, number> = {};
    for (const [i, p] of procs.entries()) {
      const role = layout.processes[i].join('+');
      out[role] = (out[role] ?? 0) + cpuMs(p.child.pid!);
    }
    return out;
  };
  try {
    const agentId = await scriptedAgent(db, [{ text: 'ok' }]);
    const headers = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
    // Idle cost: what the processes burn with nothing to do, to tell fixed overhead from per-message cost.
    const troupeNow = () => Object.values(byRole()).reduce((a, b) => a + b, 0);
    await new Promise((r) => setTimeout(r, 2000));
    const i0 = { at: Date.now(), troupe: troupeNow(), redis: sum(redisPids), mongo: sum(mongoPids) };
    await new Promise((r) => setTimeout(r, 5000));
    const idleS = (Date.now() - i0.at) / 1000;
    const idle = { troupe: (troupeNow() - i0.troupe) / idleS, redis: (sum(redisPids) - i0.redis) / idleS, mongo: (sum(mongoPids) - i0.mongo) / idleS };
    const sessions: string[] = [];
    const c0 = { at: Date.now(), troupe: Object.values(byRole()).reduce((a, b) => a + b, 0), redis: sum(redisPids), mongo: sum(mongoPids), requests: counter.requests };
    await pool(Array.from({ length: opts.sessions }, (_, i) => i), 16, async (i) => {
      const r = await fetch(`${webs[i % webs.length]}/v1/agents/${agentId}/sessions`, { method: 'POST', headers, body: '{}' });
      sessions.push(((await r.json()) as { id: string }).id);
    });
    const creationEvents = await db.collection('events').countDocuments({});
    const creation = {
      sessions: sessions.length,
      seconds: (Date.now() - c0.at) / 1000,
      events: creationEvents,
      troupeCpuMs: Object.values(byRole()).reduce((a, b) => a + b, 0) - c0.troupe,
      redisCpuMs: sum(redisPids) - c0.redis,
      mongoCpuMs: sum(mongoPids) - c0.mongo,
      mongoRequests: counter.requests - c0.requests,
    };
    const sent = new Map<string, string[]>();
    const monitor = opts.monitor ? await RedisMonitor.start(redisPorts) : null;
    await new Promise((r) => setTimeout(r, 500));
    monitor?.reset();
    const roles0 = byRole();
    const [redis0, mongo0] = [sum(redisPids), sum(mongoPids)];
    const req0 = counter.requests;
    const started = Date.now();
    let n = 0;
    let retries = 0;
    await pool(sessions, opts.concurrency, async (sid) => {
      const ids: string[] = [];
      for (let m = 0; m < opts.messages; m++) {
        // A 503 (no answer in time) or 409 (first try still in flight) is retried with the same key, as a client would.
        for (let attempt = 1; ; attempt++) {
          const r = await fetch(`${webs[n++ % webs.length]}/v1/sessions/${sid}/events`, { method: 'POST', headers: { ...headers, 'Idempotency-Key': `${sid}-${m}` }, body: JSON.stringify({ type: 'user.message', content: [{ type: 'text', text: `m${m}` }] }) });
          const body = (await r.json()) as { message?: { id: string } };
          if ((r.status === 503 || r.status === 409) && attempt < 20) {
            retries++;
            await new Promise((res) => setTimeout(res, 500));
            continue;
          }
          if (r.status !== 201 || !body.message) throw new Error(`POST answered ${r.status}: ${JSON.stringify(body)}`);
          ids.push(body.message.id);
          break;
        }
      }
      sent.set(sid, ids);
    });
    const total = opts.sessions * opts.messages;
    const deadline = Date.now() + 600_000;
    while ((await db.collection('messages').countDocuments({ status: 'completed' })) < total) {
      if (Date.now() > deadline) throw new Error('messages did not complete within 10 minutes');
      await new Promise((r) => setTimeout(r, 100));
    }
    const seconds = (Date.now() - started) / 1000;
    const roles1 = byRole();
    const roleCpuMs = Object.fromEntries(Object.keys(roles1).map((r) => [r, roles1[r] - roles0[r]]));
    const redisCpuMs = sum(redisPids) - redis0;
    const mongoCpuMs = sum(mongoPids) - mongo0;
    const mongoRequests = counter.requests - req0;
    const redis = monitor ? { client: monitor.client, lua: monitor.lua } : undefined;
    monitor?.close();
    let violations = 0;
    let events = -creationEvents; // the run's own events only
    for (const sid of sessions) {
      const evs = await db.collection<{ sequence_number: number; type: string; message_id: string | null }>('events').find({ session_id: sid }).sort({ sequence_number: 1 }).toArray();
      events += evs.length;
      if (evs.some((e, i) => e.sequence_number !== i + 1)) violations++;
      const users = evs.filter((e) => e.type === 'user.message').map((e) => e.message_id);
      if (JSON.stringify(users) !== JSON.stringify(sent.get(sid))) violations++;
    }
    return { layout: layout.name, messages: total, events, seconds, violations, retries, roleCpuMs, redisCpuMs, mongoCpuMs, mongoRequests, redis, idle, creation };
  } finally {
    for (const p of procs) p.child.kill('SIGTERM');
    await Promise.all(procs.map((p) => new Promise((r) => (p.child.exitCode !== null ? r(null) : p.child.once('exit', r)))));
    await db.dropDatabase().catch(() => undefined);
    await counter.close();
  }
}

function report(r: Result): void {
  const per = (x: number) => (x / r.messages).toFixed(1);
  const troupe = Object.values(r.roleCpuMs).reduce((a, b) => a + b, 0);
  const roles = Object.entries(r.roleCpuMs).map(([role, ms]) => `${role} ${per(ms)}`).join(', ');
  console.log(
    `${r.layout}: ${r.messages} messages, ${r.events} events in ${r.seconds.toFixed(1)} s -> ${(r.events / r.seconds).toFixed(0)} events/s, ${(r.messages / r.seconds).toFixed(1)} messages/s; ` +
      `ordering violations ${r.violations}, retried POSTs ${r.retries}; CPU ms per message: Troupe ${per(troupe)} (${roles}), Redis ${per(r.redisCpuMs)}, MongoDB-wire ${per(r.mongoCpuMs)}; ` +
      `MongoDB requests per message ${per(r.mongoRequests)}` +
      (r.redis ? `; Redis commands per message: ${per(r.redis.client)} from clients, ${per(r.redis.lua)} inside scripts` : ''),
  );
  const marginal = (total: number, idlePerS: number) => per(Math.max(0, total - idlePerS * r.seconds));
  console.log(
    `  idle CPU ms/s: Troupe ${r.idle.troupe.toFixed(0)}, Redis ${r.idle.redis.toFixed(0)}, MongoDB-wire ${r.idle.mongo.toFixed(0)}; ` +
      `CPU ms per message above idle: Troupe ${marginal(troupe, r.idle.troupe)}, Redis ${marginal(r.redisCpuMs, r.idle.redis)}, MongoDB-wire ${marginal(r.mongoCpuMs, r.idle.mongo)}`,
  );
  const c = r.creation;
  const each = (x: number) => (x / c.sessions).toFixed(1);
  console.log(
    `  session creation: ${c.sessions} sessions in ${c.seconds.toFixed(1)} s (${(c.sessions / c.seconds).toFixed(0)}/s at 16 at a time); per session: ledger events ${each(c.events)}, ` +
      `CPU ms Troupe ${each(c.troupeCpuMs)}, Redis ${each(c.redisCpuMs)}, MongoDB-wire ${each(c.mongoCpuMs)}; MongoDB requests ${each(c.mongoRequests)}`,
  );
}

async function main(): Promise<void> {
  const single = await startLocalServices({ redis: 'single', log: () => undefined });
  const cluster = await startLocalServices({ redis: 'cluster', mongodbUrl: single.mongodbUrl, log: () => undefined });
  const mongo = new MongoClient(single.mongodbUrl, { directConnection: true });
  await mongo.connect();
  try {
    const services = { single, cluster };
    const opts = { sessions: Number(values.sessions), messages: Number(values.messages), concurrency: Number(values.concurrency), monitor: false };
    if (values.calibrate) {
      for (const key of ['one', 'one-c']) report(await runLayout(key, services, mongo, { sessions: 20, messages: 3, concurrency: 1, monitor: true }));
    }
    for (const key of values.layouts!.split(',')) {
      if (!LAYOUTS[key]) throw new Error(`unknown layout ${key}; known: ${Object.keys(LAYOUTS).join(', ')}`);
      report(await runLayout(key, services, mongo, opts));
    }
  } finally {
    await mongo.close();
    await cluster.stop();
    await single.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
