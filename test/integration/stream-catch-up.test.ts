import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RoundTrips } from '../../src/lib/metrics/round-trips.js';
import { createRedis, type RedisClient } from '../../src/lib/redis/connection.js';
import { parseRedisTarget } from '../../src/lib/redis/target.js';
import { freePort } from '../../infra/services/process.js';
import { toEventDoc, type EventDoc } from '../../src/store/ledger.js';
import { scriptedAgent } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { startRoleProcess, type RoleProcess } from '../support/role-process.js';
import { SseClient } from '../support/sse.js';
import { json, until } from '../support/wait.js';

/** Sessions and streams on each for the bound; a handful of either would not tell a herd from a shared read. */
const QUIET_SESSIONS = 12;
const STREAMS_EACH = 15;
const BUSY_SESSIONS = 8;
const BUSY_STREAMS_EACH = 3;
const MESSAGES_EACH = 4;
/**
 * MongoDB statements of one read that finds one event after the stream's
 * cursor (store/ledger.ts `after`: a probe that finds it, then four in
 * parallel that find the end). A read per session is this many per session.
 */
const FINDS_PER_READ = 5;

/**
 * A web process's subscriber reconnects (its Redis connection killed with
 * CLIENT KILL) while it serves many streams: every stream reads what it
 * missed from the ledger, and ends with its session's ledger exactly, in
 * order, each event once. The web is its own OS process, so the MongoDB
 * statements it sends are its alone (its driver's command monitoring, the
 * benchmarks' round-trip counts); the worker runs in the test's process.
 * One redis-server: on a Redis Cluster ioredis runs the shard subscribers
 * and the hub does not learn of a reconnect.
 */
describe('SSE catch-up after a subscriber reconnect', function () {
  this.timeout(180_000);
  let h: Harness;
  let web: RoleProcess;
  let webUrl = '';
  let redis: RedisClient;
  let agentId = '';
  let orgId = '';
  const counts = join(tmpdir(), `troupe-catch-up-${process.pid}.json`);
  const clients: SseClient[] = [];
  const auth = () => ({ Authorization: `Bearer ${h.apiKey}` });

  before(async function () {
    if (parseRedisTarget(process.env.REDIS_URL ?? '', process.env.REDIS_CLUSTER === '1').cluster) return this.skip();
    h = await startHarness({ roles: ['worker'], env: { LOG_LEVEL: 'warn' } });
    ({ agentId, orgId } = await scriptedAgent(h, [{ text: 'done' }]));
    redis = createRedis(h.env.REDIS_URL, 'command', 'catch-up-test');
    const port = await freePort();
    web = await startRoleProcess(['web'], { ...h.env, LOG_LEVEL: 'info', PORT: String(port), TROUPE_PUBLIC_URL: `http://127.0.0.1:${port}`, TROUPE_ROUND_TRIPS_FILE: counts });
    webUrl = `http://127.0.0.1:${port}`;
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed' && web) console.log(`--- web (pid ${web.child.pid}):\n${web.lines.filter((l) => !l.includes('"msg":"request"')).slice(-30).join('\n')}`);
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    if (web) {
      web.kill('SIGTERM');
      await Promise.race([web.exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (web.child.exitCode === null && web.child.signalCode === null) web.kill('SIGKILL');
    }
    redis?.disconnect();
    await h?.close();
    for (const f of [counts, `${counts}.tmp`]) rmSync(f, { force: true });
  });

  async function newSession(): Promise<string> {
    const r = await fetch(`${webUrl}/v1/agents/${agentId}/sessions`, { method: 'POST', headers: { ...auth(), 'Content-Type': 'application/json' }, body: '{}' });
    return (await json<{ id: string }>(r, 201)).id;
  }

  async function openStreams(sessionId: string, n: number): Promise<SseClient[]> {
    const opened = await Promise.all(Array.from({ length: n }, async () => {
      const c = new SseClient(`${webUrl}/v1/sessions/${sessionId}/stream`, auth());
      clients.push(c);
      await c.open();
      assert.equal(c.status, 200);
      return c;
    }));
    return opened;
  }

  const events = () => h.running.core.db.collection<EventDoc>('events');

  async function ledger(sessionId: string): Promise<number[]> {
    return (await events().find({ session_id: sessionId }, { projection: { sequence_number: 1 } }).toArray()).map((d) => d.sequence_number).sort((a, b) => a - b);
  }

  const sequences = (c: SseClient, sessionId: string) => c.records.filter((r) => r.id).map((r) => (assert.ok(r.id.startsWith(`${sessionId}:`), r.id), Number(r.id.slice(sessionId.length + 1))));

  /** Statements the web process has sent that read the ledger (`find events …`), as of its last write of the file (every 0.5 s). */
  async function ledgerFinds(): Promise<number> {
    await new Promise((r) => setTimeout(r, 1200));
    assert.ok(existsSync(counts), 'the web process writes its round-trip counts');
    const rt = JSON.parse(readFileSync(counts, 'utf8')) as RoundTrips;
    return Object.entries(rt.mongo.shapes).filter(([k]) => k.startsWith('find events ')).reduce((n, [, v]) => n + v, 0);
  }

  /** The web process's subscriber connection: the one `troupe:web:hub` client that is not another test's. */
  async function webSubscriber(channelsAtLeast: number): Promise<string> {
    const list = String(await redis.client('LIST')).split('\n').filter((l) => / name=troupe:web:hub /.test(l));
    const ours = list.map((l) => ({ id: /\bid=(\d+)/.exec(l)![1], sub: Number(/\bsub=(\d+)/.exec(l)![1]) })).filter((c) => c.sub >= channelsAtLeast);
    assert.equal(ours.length, 1, `one web subscriber with ${channelsAtLeast}+ channels: ${list.join('\n')}`);
    return ours[0].id;
  }

  it('streams of one session share one ledger read: each stream gets what it missed, once, in order', async () => {
    const sessions = await Promise.all(Array.from({ length: QUIET_SESSIONS }, () => newSession()));
    const streams = new Map<string, SseClient[]>();
    for (const s of sessions) streams.set(s, await openStreams(s, STREAMS_EACH));
    const heads = new Map(await Promise.all(sessions.map(async (s) => [s, (await ledger(s)).length] as const)));
    await until(async () => sessions.every((s) => streams.get(s)!.every((c) => sequences(c, s).length === heads.get(s))), 20_000);
    // What the subscriber will have missed: appended to the ledger while it was away, so never published.
    await events().insertMany(sessions.map((s) => toEventDoc(orgId, s, heads.get(s)! + 1, { type: 'session.status_changed', message_id: null, source: 'platform', actor: { type: 'system', id: null }, data: { from: 'idle', to: 'idle' } }, new Date(), {})));
    const subscriber = await webSubscriber(QUIET_SESSIONS);
    const before = await ledgerFinds();
    await redis.client('KILL', 'ID', subscriber);

    await until(async () => sessions.every((s) => streams.get(s)!.every((c) => sequences(c, s).length === heads.get(s)! + 1)), 20_000);
    for (const s of sessions) {
      const want = Array.from({ length: heads.get(s)! + 1 }, (_, i) => i + 1);
      for (const c of streams.get(s)!) assert.deepEqual(sequences(c, s), want, `stream of ${s}: its ledger, in order, each once`);
    }
    const finds = (await ledgerFinds()) - before;
    // One read per stream (the old behaviour) would be STREAMS_EACH times this.
    assert.ok(finds <= QUIET_SESSIONS * FINDS_PER_READ, `${finds} ledger statements for ${QUIET_SESSIONS} sessions of ${STREAMS_EACH} streams: at most one read per session (${QUIET_SESSIONS * FINDS_PER_READ})`);
    assert.ok(finds >= QUIET_SESSIONS, `${finds} ledger statements: every session was read`);
    assert.notEqual(await webSubscriber(QUIET_SESSIONS), subscriber, 'the subscriber reconnected');
  });

  it('a reconnect while messages are appended leaves every stream with its ledger, gapless, each event once', async () => {
    const sessions = await Promise.all(Array.from({ length: BUSY_SESSIONS }, () => newSession()));
    const streams = new Map<string, SseClient[]>();
    for (const s of sessions) streams.set(s, await openStreams(s, BUSY_STREAMS_EACH));
    const messages = h.running.core.db.collection('messages');
    const completed = () => messages.countDocuments({ session_id: { $in: sessions }, status: 'completed' });
    // A POST whose answer was on its way when the subscriber dropped gets a 503 (the command may still be applied):
    // retried with its Idempotency-Key, as a client would.
    const send = async (s: string, n: number) => {
      for (let attempt = 1; ; attempt++) {
        const r = await fetch(`${webUrl}/v1/sessions/${s}/events`, { method: 'POST', headers: { ...auth(), 'Content-Type': 'application/json', 'Idempotency-Key': `${s}-${n}` }, body: JSON.stringify({ type: 'user.message', content: [{ type: 'text', text: `m${n}` }] }) });
        const text = await r.text();
        if ((r.status === 503 || r.status === 409) && attempt < 5) {
          await new Promise((res) => setTimeout(res, 200));
          continue;
        }
        assert.equal(r.status, 201, text);
        return;
      }
    };
    // Each session's messages one after another (each once the one before it is done), all sessions at once.
    let sent = 0;
    const traffic = Promise.all(sessions.map(async (s) => {
      for (let n = 1; n <= MESSAGES_EACH; n++) {
        await send(s, n);
        sent++;
        await until(async () => (await messages.countDocuments({ session_id: s, status: 'completed' })) >= n, 30_000);
      }
    }));
    // Mid-traffic: some messages done, most not yet sent.
    await until(async () => (await completed()) >= BUSY_SESSIONS, 30_000);
    const subscriber = await webSubscriber(BUSY_SESSIONS);
    await redis.client('KILL', 'ID', subscriber);
    const sentAtKill = sent;
    await traffic;
    assert.ok(sentAtKill < BUSY_SESSIONS * MESSAGES_EACH, 'the subscriber was killed while messages were still being sent');
    assert.equal(await completed(), BUSY_SESSIONS * MESSAGES_EACH);

    const want = new Map(await Promise.all(sessions.map(async (s) => [s, await ledger(s)] as const)));
    for (const [s, seqs] of want) assert.deepEqual(seqs, Array.from({ length: seqs.length }, (_, i) => i + 1), `the ledger of ${s} has no hole`);
    await until(async () => sessions.every((s) => streams.get(s)!.every((c) => sequences(c, s).length >= want.get(s)!.length)), 20_000);
    for (const s of sessions) for (const c of streams.get(s)!) assert.deepEqual(sequences(c, s), want.get(s), `stream of ${s}: its ledger, in order, each once`);
    assert.notEqual(await webSubscriber(BUSY_SESSIONS), subscriber, 'the subscriber reconnected');
  });
});
