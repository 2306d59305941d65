/**
 * Catch-up burst benchmark: what one web process does to the store when its
 * Redis subscriber reconnects and every open stream reads what it missed.
 * Starts Redis + the MongoDB-wire server, a web process and a worker process,
 * then per `--streams` figure, on a fresh stack:
 *  - creates sessions and opens the streams on the one web process
 *    (`--per-session` streams on each session: a shared session, a team
 *    watching one agent, or one user's tabs);
 *  - appends `--missed` events to every session's ledger straight into the
 *    store, never published: what was appended while the subscriber was away
 *    (the stream can only find them in the ledger);
 *  - kills the web process's subscriber connection in Redis (CLIENT KILL ID of
 *    the `troupe:web:hub` client; ioredis
 *    reconnects, the hub confirms its subscriptions and tells the streams);
 * and prints the time from the kill until every stream has every missed
 * event (each stream checked gapless, no duplicate), the MongoDB statements
 * the web process sent meanwhile (the driver's command monitoring), the
 * store's and the web's CPU, and the latency of an unrelated GET of a session
 * sent one after another during the burst (and before it, idle, for scale).
 * Figures, not pass/fail.
 */
import { setMaxListeners } from 'node:events';
import { Redis } from 'ioredis';
import { request } from 'undici';
import { benchArgs } from '../support/args.js';
import { useKeepAliveClient } from '../support/http-client.js';
import { fmt, summary } from '../support/percentiles.js';
import { stream } from '../support/sse.js';
import { formatCpu, pool, scriptedAgent, startStack, withCpu } from '../support/stack.js';
import { toEventDoc, type EventDoc } from '../../src/store/ledger.js';
import type { MongoKind } from '../../infra/services/mongo-wire.js';

useKeepAliveClient();

const USAGE = 'Usage: node dist/bench/catchup/run.js [--streams 500,2000,5000] [--per-session 1] [--missed 3] [--store mongo-java-server|ferretdb] [--bound-s 120]';
const values = benchArgs(USAGE, { streams: { type: 'string', default: '500,2000,5000' }, 'per-session': { type: 'string', default: '1' }, missed: { type: 'string', default: '3' }, store: { type: 'string' }, 'bound-s': { type: 'string', default: '120' } }, ['per-session', 'missed', 'bound-s']);
const PER_SESSION = Math.max(1, Number(values['per-session']));
const MISSED = Math.max(1, Number(values.missed));
const BOUND_MS = Number(values['bound-s']) * 1000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The web process's subscriber (`troupe:web:hub`): the hub connection with the most channels (a worker's has a few). */
async function webSubscriber(redis: Redis, atLeast: number): Promise<string> {
  const clients = String(await redis.client('LIST'))
    .split('\n')
    .map((line) => Object.fromEntries(line.split(' ').map((kv) => kv.split('=', 2) as [string, string])))
    .filter((c) => c.name?.endsWith(':hub'))
    .sort((a, b) => Number(b.sub) - Number(a.sub));
  if (!clients.length || Number(clients[0].sub) < atLeast) throw new Error(`no subscriber with ${atLeast} channels: ${clients.map((c) => `${c.id}:${c.sub}`).join(', ')}`);
  return clients[0].id;
}

async function measure(streams: number): Promise<string> {
  const sessionsWanted = Math.ceil(streams / PER_SESSION);
  const stack = await startStack({ workers: 1, mongoKind: values.store as MongoKind | undefined });
  const { base, apiKey } = stack;
  const auth = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
  const abort = new AbortController();
  setMaxListeners(0, abort.signal);
  const redis = new Redis(stack.services.redisUrl);
  try {
    const agentId = await scriptedAgent(stack.db, [{ text: 'ok' }]);
    const sessions: string[] = [];
    await pool(Array.from({ length: sessionsWanted + 1 }, (_, i) => i), 32, async () => {
      const r = await request(`${base}/v1/agents/${agentId}/sessions`, { method: 'POST', headers: auth, body: '{}' });
      sessions.push(((await r.body.json()) as { id: string }).id);
    });
    // The unrelated request's session: no stream follows it, nothing is appended to it.
    const probe = sessions.pop()!;
    const events = stack.db.collection<EventDoc>('events');
    const heads = new Map<string, number>(sessions.map((s) => [s, 0]));
    for (let i = 0; i < sessions.length; i += 500) {
      const rows = await events.aggregate<{ _id: string; head: number }>([{ $match: { session_id: { $in: sessions.slice(i, i + 500) } } }, { $group: { _id: '$session_id', head: { $max: '$sequence_number' } } }]).toArray();
      for (const r of rows) heads.set(r._id, r.head);
    }
    const orgId = (await events.findOne({ session_id: sessions[0] }))?.org_id ?? (await stack.db.collection<{ _id: string }>('orgs').findOne({}))!._id;

    // Each stream: gapless, no duplicate, and when it last got something.
    interface Follower { session: string; last: number; faults: number; doneAt: number }
    const followers: Follower[] = Array.from({ length: streams }, (_, i) => ({ session: sessions[i % sessions.length], last: 0, faults: 0, doneAt: 0 }));
    let target = (f: Follower) => heads.get(f.session)!;
    // A session with an empty ledger has nothing to backfill.
    let remaining = followers.filter((f) => target(f) > 0).length;
    let allDone!: () => void;
    let done = new Promise<void>((r) => (allDone = r));
    if (remaining === 0) allDone();
    const onEvent = (f: Follower) => (seq: number) => {
      if (seq !== f.last + 1) f.faults++;
      f.last = seq;
      if (seq === target(f) && !f.doneAt) {
        f.doneAt = performance.now();
        if (--remaining === 0) allDone();
      }
    };
    const opened = performance.now();
    await pool(followers, 100, (f) => stream(`${base}/v1/sessions/${f.session}/stream`, apiKey, onEvent(f), abort.signal));
    await Promise.race([done, sleep(BOUND_MS)]);
    if (remaining > 0) throw new Error(`${remaining} streams did not backfill their ledger within the bound`);
    console.log(`${streams} streams on ${sessions.length} sessions (${PER_SESSION} each) open and current in ${((performance.now() - opened) / 1000).toFixed(1)} s`);

    // What the subscriber will have missed: appended, never published.
    const missed: EventDoc[] = [];
    const now = new Date();
    for (const s of sessions) {
      for (let k = 1; k <= MISSED; k++) {
        missed.push(toEventDoc(orgId, s, heads.get(s)! + k, { type: 'session.status_changed', message_id: null, source: 'platform', actor: { type: 'system', id: null }, data: { from: 'idle', to: 'idle' } }, now, {}));
      }
    }
    for (let i = 0; i < missed.length; i += 1000) await events.insertMany(missed.slice(i, i + 1000), { ordered: false });
    target = (f) => heads.get(f.session)! + MISSED;
    for (const f of followers) f.doneAt = 0;
    remaining = streams;
    done = new Promise<void>((r) => (allDone = r));

    const getSession = async () => {
      const t = performance.now();
      const r = await request(`${base}/v1/sessions/${probe}`, { headers: auth });
      await r.body.arrayBuffer();
      if (r.statusCode !== 200) throw new Error(`GET session: ${r.statusCode}`);
      return performance.now() - t;
    };
    const idle: number[] = [];
    for (let i = 0; i < 50; i++) idle.push(await getSession());
    const subscriber = await webSubscriber(redis, sessions.length);
    // The web process writes its round-trip counts twice a second.
    await sleep(1200);
    const before = stack.webRoundTrips();

    const during: number[] = [];
    let killedAt = 0;
    let caughtUp = false;
    const { cpu } = await withCpu(stack, async () => {
      const probing = (async () => {
        while (!caughtUp) during.push(await getSession());
      })();
      killedAt = performance.now();
      await redis.client('KILL', 'ID', subscriber);
      await Promise.race([done, sleep(BOUND_MS)]);
      caughtUp = true;
      await probing;
    });
    const finished = performance.now();
    await sleep(1200);
    const after = stack.webRoundTrips();
    const faults = followers.reduce((n, f) => n + f.faults, 0);
    const short = followers.filter((f) => f.last !== target(f)).length;
    const each = summary(followers.filter((f) => f.doneAt).map((f) => f.doneAt - killedAt));
    const g = summary(during);
    const gi = summary(idle);
    const ledgerFinds = (rt: typeof before) => Object.entries(rt.mongo.shapes).filter(([k]) => k.startsWith('find events ')).reduce((n, [, v]) => n + v, 0);
    const finds = ledgerFinds(after) - ledgerFinds(before);
    const total = after.mongo.total - before.mongo.total;
    const store = cpu[stack.services.mongoKind];
    console.log(`subscriber killed: every stream caught up in ${fmt(finished - killedAt)} (per stream p50 ${fmt(each.p50)}, p99 ${fmt(each.p99)}); ${short} streams short, ${faults} out of order or repeated`);
    console.log(`MongoDB statements from the web process during the burst: ${total} (ledger reads, find events: ${finds}, ${(finds / streams).toFixed(2)} per stream, ${(finds / sessions.length).toFixed(2)} per session)`);
    console.log(`unrelated GET /v1/sessions/{id} during the burst: n ${g.n}, p50 ${fmt(g.p50)}, p99 ${fmt(g.p99)}, max ${fmt(g.max)} (idle before: p50 ${fmt(gi.p50)}, max ${fmt(gi.max)})`);
    console.log(`CPU during the burst, cores average/busiest second: ${formatCpu(cpu)}`);
    return `| ${streams} | ${sessions.length} | ${fmt(finished - killedAt)} | ${finds} | ${store ? `${store.average.toFixed(2)} / ${store.peak.toFixed(2)}` : 'n/a'} | ${cpu.web ? `${cpu.web.average.toFixed(2)} / ${cpu.web.peak.toFixed(2)}` : 'n/a'} | ${fmt(g.p50)} / ${fmt(g.max)} (n ${g.n}) | ${short} / ${faults} |`;
  } finally {
    abort.abort();
    redis.disconnect();
    await stack.close();
  }
}

async function main(): Promise<void> {
  const rows: string[] = [];
  for (const n of values.streams.split(',').map(Number)) {
    if (!(n > 0)) throw new Error(`--streams: ${values.streams}`);
    console.log(`\n${n} streams:`);
    rows.push(await measure(n));
  }
  console.log(`\nper-session ${PER_SESSION}, missed ${MISSED} events per session`);
  console.log('| streams | sessions | all caught up | web `find events` | store CPU avg / peak | web CPU avg / peak | unrelated GET p50 / max | short / out of order |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(r);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
