import assert from 'node:assert/strict';
import type { Db } from 'mongodb';
import type { TcpProxy } from '../support/tcp-proxy.js';
import { auditUntilSettled } from './support/audit.js';
import { Cluster } from './support/cluster.js';
import { Load, scriptedAgent } from './support/load.js';
import { proxyFor, within } from './support/partition.js';
import { ReconnectingStream } from './support/reconnecting-stream.js';
import { assertIntact, FULL } from './support/summary.js';

const SESSIONS = FULL ? 16 : 8;
/** Messages per session before the cut, and again while it lasts. */
const MESSAGES = 2;
/** How long the partition lasts at least: past ioredis's 5 s command timeout and the hub's liveness probe. */
const PARTITION_MS = 12_000;
/** What a client may wait for an answer from a partitioned web process: the 15 s answer timeout, and some slack. */
const ANSWER_BOUND_MS = 17_000;
/** From the heal until every stream on the cut process has every event of its session. */
const CATCH_UP_BOUND_MS = 20_000;

interface Answer {
  status: number;
  ms: number;
  body: { error?: { type?: string; code?: string; message?: string } };
}

async function timed(url: string, init: RequestInit = {}): Promise<Answer> {
  const start = Date.now();
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
    const text = await res.text();
    return { status: res.status, ms: Date.now() - start, body: text ? (JSON.parse(text) as Answer['body']) : {} };
  } catch (err) {
    return { status: 0, ms: Date.now() - start, body: { error: { message: (err as Error).message } } };
  }
}

/** How many events each session's ledger holds, straight from MongoDB. */
async function ledgerLengths(db: Db, sessions: string[]): Promise<Map<string, number>> {
  const rows = await db.collection('events').aggregate<{ _id: string; n: number }>([{ $match: { session_id: { $in: sessions } } }, { $group: { _id: '$session_id', n: { $sum: 1 } } }]).toArray();
  return new Map(sessions.map((s) => [s, rows.find((r) => r._id === s)?.n ?? 0]));
}

/**
 * A web process that serves SSE streams is partitioned from Redis: its
 * subscriber and its command connection stop answering (a blackhole, not a
 * refused connection), while workers and a second web process reach
 * everything and messages keep being appended. Mid-partition Redis gives up
 * on the cut process's connections (as it does past a subscriber's output
 * buffer limit or its own timeouts) and the close is lost in the partition:
 * once healed, the cut process holds half-open sockets that nothing will ever
 * arrive on, until it writes to them. Streams are checked against the ledger:
 * every event once, in order, however they got it (live, from the ledger, or
 * by reconnecting with Last-Event-ID as an EventSource does).
 */
describe('fault: a web process partitioned from Redis with SSE streams open', function () {
  let c: Cluster;
  let proxy: TcpProxy;
  let agentId: string;
  before(async () => {
    c = await Cluster.start();
    const p = await proxyFor(c.env.REDIS_URL);
    proxy = p.proxy;
    await c.start('cut', 'web', { REDIS_URL: p.url });
    await c.start('direct', 'web');
    await c.start('worker-1', 'worker');
    await c.start('worker-2', 'worker');
    agentId = await scriptedAgent(await c.db());
  });
  after(async () => {
    await c?.close();
    await proxy?.close();
  });

  it(`its streams get every event once, in order, after it heals; a POST to it while cut is a 503 (${SESSIONS} sessions)`, async () => {
    const cutUrl = c.url('cut');
    const directUrl = c.url('direct');
    // Clients send through the web process that reaches Redis; the cut one only serves streams (and the probes below).
    const load = new Load({ webUrls: () => [directUrl], apiKey: c.apiKey });
    const sessions = await Promise.all(Array.from({ length: SESSIONS }, () => load.session(agentId)));
    // A session with no stream: what the cut process answers after healing is asked there, so that no live event
    // of a streamed session reaches it and repairs its streams for it.
    // And one no stream follows until the cut: a stream opened for it then subscribes through the cut.
    const [probeSession, lateSession] = await Promise.all([load.session(agentId), load.session(agentId)]);
    const traffic = [...sessions, lateSession];
    const onCut = sessions.map((s) => new ReconnectingStream(s, () => [cutUrl], c.apiKey));
    const onDirect = sessions.map((s) => new ReconnectingStream(s, () => [directUrl], c.apiKey));
    const streams = [...onCut, ...onDirect];
    streams.forEach((s) => s.start());
    await Promise.all(streams.map((s) => s.ready));
    const all = [...streams];
    const db = await c.db();

    // Before: traffic every stream sees live.
    await Promise.all(traffic.map((s) => load.messages(s, MESSAGES)));
    await auditUntilSettled(db, traffic, load.acked, 30_000);
    const beforeCut = (await ledgerLengths(db, [lateSession])).get(lateSession)!;

    proxy.blackhole();
    const cutAt = Date.now();
    // A stream opened on the cut process while it is cut: it gets the ledger so far without waiting for the heal.
    const late = new ReconnectingStream(lateSession, () => [cutUrl], c.apiKey);
    late.start();
    const lateBackfilled = within(ANSWER_BOUND_MS, () => late.sequences.length >= beforeCut);
    // During: the workers go on appending; nothing of it can reach the cut process through Redis.
    const during = Promise.all(traffic.map((s) => load.messages(s, MESSAGES, 0, MESSAGES + 1)));
    const auth = { Authorization: `Bearer ${c.apiKey}`, 'Content-Type': 'application/json' };
    const [post, ready] = await Promise.all([
      timed(`${cutUrl}/v1/sessions/${probeSession}/events`, { method: 'POST', headers: { ...auth, 'Idempotency-Key': `cut-${probeSession}` }, body: JSON.stringify({ type: 'user.message', content: [{ type: 'text', text: 'while cut' }] }) }),
      timed(`${cutUrl}/readyz`),
    ]);
    await during;
    const lateAnswered = await lateBackfilled;
    const settled = await auditUntilSettled(db, traffic, load.acked, 30_000);
    assert.ok(settled.settledAt, `every message terminal while the web process was cut: ${settled.audit.problems.slice(0, 5).join('; ')}`);
    const wait = PARTITION_MS - (Date.now() - cutAt);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const lengths = await ledgerLengths(db, traffic);
    const behind = onCut.filter((s) => s.sequences.length < lengths.get(s.sessionId)!).length;
    // Redis gives up on the cut process's connections; it is not told.
    const lateAtHeal = late.sequences.length;
    const severed = proxy.sever();
    assert.ok(proxy.partitioned, 'all of it while the partition lasted');
    proxy.heal();
    const healedAt = Date.now();
    process.stdout.write(`      while cut: POST ${post.status} ${post.body.error?.code ?? ''} in ${post.ms} ms, /readyz ${ready.status} in ${ready.ms} ms, a stream opened on it had the ledger so far ${lateAnswered ? `in ${lateAnswered.ms} ms` : 'never'}; ${behind} of ${onCut.length} streams on it behind the ledger at the heal; ${severed} connections severed\n`);

    // After: no more traffic on the streamed sessions. Every stream must reach the ledger's end by itself.
    all.push(late);
    const current = await within(CATCH_UP_BOUND_MS, () => all.every((s) => s.sequences.length >= lengths.get(s.sessionId)!));
    const caughtUp = Math.max(...onCut.map((s) => s.lastEventAt)) - healedAt;
    const readyAgain = await within(CATCH_UP_BOUND_MS, async () => (await timed(`${cutUrl}/readyz`)).status === 200);
    // A client of the healed process, retrying as clients do (503s included): it gets its answer.
    const healedClient = new Load({ webUrls: () => [cutUrl], apiKey: c.apiKey, perMessageDeadlineMs: CATCH_UP_BOUND_MS });
    const postStart = Date.now();
    await healedClient.messages(probeSession, 1);
    const postAfter = { ms: Date.now() - postStart, attempts: healedClient.posts, acked: healedClient.acked.size };
    // A moment for anything late (a duplicate would come now).
    await new Promise((r) => setTimeout(r, 1000));
    await Promise.all(all.map((s) => s.close()));
    process.stdout.write(`      after the heal: streams current ${current ? `${current.ms} ms` : 'never'} (last event on the cut process ${caughtUp} ms after it), ${onCut.reduce((n, s) => n + s.reconnects, 0)} reconnects and ${onCut.reduce((n, s) => n + s.retryHints, 0)} retry hints on it; /readyz 200 ${readyAgain ? `${readyAgain.ms} ms` : 'never'} after it; POST answered ${postAfter.acked ? `in ${postAfter.ms} ms, ${postAfter.attempts} attempts` : 'never'}\n`);

    assert.ok(behind > 0, 'the partition held back events from the cut process’s streams');
    assert.equal(post.status, 503, `a POST to the cut process is a 503, got ${post.status} ${JSON.stringify(post.body)}`);
    assert.ok(post.body.error?.type && post.body.error.message, `in the error shape: ${JSON.stringify(post.body)}`);
    assert.ok(post.ms <= ANSWER_BOUND_MS, `answered in ${post.ms} ms (bound ${ANSWER_BOUND_MS} ms)`);
    assert.equal(ready.status, 503, '/readyz on the cut process says it is not ready');
    assert.ok(ready.ms <= 3000, `/readyz answered in ${ready.ms} ms`);
    for (const s of onDirect) assert.ok(s.exactly(lengths.get(s.sessionId)!), `control stream of ${s.sessionId}: ${s.sequences.join(',')} of ${lengths.get(s.sessionId)}`);
    for (const s of onCut) assert.ok(s.exactly(lengths.get(s.sessionId)!), `stream on the cut process of ${s.sessionId}: ${s.sequences.join(',')} of ${lengths.get(s.sessionId)}`);
    assert.ok(lateAnswered, `a stream opened on the cut process while cut had the ledger so far (${beforeCut} events) before the heal: it had ${lateAtHeal}`);
    assert.ok(late.exactly(lengths.get(late.sessionId)!), `the stream opened while cut, after the heal: ${late.sequences.join(',')} of ${lengths.get(late.sessionId)}`);
    assert.ok(current, `every stream current within ${CATCH_UP_BOUND_MS} ms of the heal`);
    assert.ok(readyAgain, 'the cut process is ready again once healed');
    assert.equal(postAfter.acked, 1, `a POST to the healed process is answered (${postAfter.attempts} attempts in ${postAfter.ms} ms)`);
    const final = await auditUntilSettled(db, [...traffic, probeSession], new Map([...load.acked, ...healedClient.acked]), 30_000);
    assert.deepEqual([...load.internalErrors, ...healedClient.internalErrors], []);
    assert.equal(load.abandoned.length, 0);
    assertIntact(final.audit);
  });
});
