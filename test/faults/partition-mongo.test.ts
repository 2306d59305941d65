import assert from 'node:assert/strict';
import type { Db } from 'mongodb';
import { lastAssignment } from '../support/shard-assignment.js';
import type { TcpProxy } from '../support/tcp-proxy.js';
import { auditUntilSettled, recoveryMs } from './support/audit.js';
import { Cluster } from './support/cluster.js';
import { PARTITION_SHARDS, startSplit, trafficUnderWay, within } from './support/partition.js';
import { assertIntact, FULL, record } from './support/summary.js';

const SHARDS = PARTITION_SHARDS;
const SESSIONS = FULL ? 40 : 16;
const MESSAGES = 3;
/**
 * Failover from a MongoDB partition: the worker knows it is cut off only
 * after UNANSWERED_MS (8 s) without a heartbeat, and the turn it was running
 * holds its shard (its lock still renewed over Redis) until its MongoDB
 * operation fails: the heartbeat's timeout interrupts it (5-7 s), the
 * driver's retry then waits out server selection (5 s). 11-20 s measured; bound 25.
 */
const FAILOVER_BOUND_MS = 25_000;

/** Every stored row of these sessions that a late write could add or roll back: ledger events, messages, sessions. */
async function snapshot(db: Db, sessions: string[]): Promise<unknown[]> {
  const q = { session_id: { $in: sessions } };
  return [
    await db.collection('events').find(q, { projection: { _id: 1, created_at: 1 } }).sort({ _id: 1 }).toArray(),
    await db.collection('messages').find(q, { projection: { _id: 1, status: 1, last_sequence: 1, completed_at: 1 } }).sort({ _id: 1 }).toArray(),
    await db.collection('sessions').find({ _id: { $in: sessions as never[] } }, { projection: { _id: 1, status: 1, last_sequence: 1 } }).sort({ _id: 1 }).toArray(),
  ];
}

/**
 * The worker `cut` reaches MongoDB through a proxy that goes silent both ways
 * (sockets open, nothing refused), while it still reaches Redis: it keeps its
 * membership heartbeat and renews its job locks, so nothing in Redis says it
 * is in trouble. Before the fix it kept its shards for the whole partition:
 * every session there stood still (0 of 75 messages in 20 s) beside an idle
 * healthy worker, and clients waited out the 15 s ask timeout for a 503. Now
 * a worker whose MongoDB answers no heartbeat for UNANSWERED_MS steps out of
 * the membership and the other worker runs its shards. On healing, the writes the
 * partition held arrive late and must change nothing: they used to roll
 * completed messages back to running (read-model writes were not fenced).
 */
describe('fault: a worker partitioned from MongoDB mid-turn', function () {
  let c: Cluster;
  let proxy: TcpProxy;
  let agentId: string;
  before(async () => {
    ({ c, proxy, agentId } = await startSplit('MONGODB_URL'));
  });
  after(async () => {
    await c?.close();
    await proxy?.close();
  });

  it(`steps out of the membership so the other worker runs its shards, and heals with nothing lost, duplicated or rolled back (${SESSIONS} sessions x ${MESSAGES} messages, twice)`, async () => {
    const cut = c.procs.get('cut')!;
    const direct = c.procs.get('direct')!;
    const { load, sessions, onCut, traffic, db } = await trafficUnderWay(c, agentId, SESSIONS, MESSAGES);
    proxy.blackhole();
    const partitioned = Date.now();
    const doneOnCut = await db.collection('messages').countDocuments({ session_id: { $in: onCut }, status: 'completed' });
    assert.ok(doneOnCut < onCut.length * MESSAGES, 'the partition caught work on the cut worker’s shards');

    const steppedOut = await within(20_000, () => cut.lines.some((l) => l.includes('stepped out of the worker membership')));
    assert.ok(steppedOut, 'the cut worker stepped out of the membership');
    const takeover = await within(10_000, () => lastAssignment(direct)?.members === 1 && lastAssignment(direct)!.shards.length === SHARDS);
    assert.ok(takeover, 'the other worker took every shard');
    await traffic;
    const { audit, settledAt } = await auditUntilSettled(db, sessions, load.acked, 45_000);
    assert.ok(proxy.partitioned && cut.child.exitCode === null, 'all of it while the cut worker was alive and still partitioned');
    assert.equal(load.abandoned.length, 0, `unacknowledged: ${load.abandoned.join(', ')}`);
    assert.deepEqual(load.internalErrors, [], 'a partition of one worker is never a 500');
    const failover = await recoveryMs(db, load.firstTried, partitioned);
    process.stdout.write(`      stepped out ${steppedOut.ms} ms after the partition began, every shard on the other worker ${steppedOut.ms + takeover.ms} ms after it, every caught message terminal ${failover} ms after it, settled ${settledAt! - partitioned} ms after it\n`);
    record('worker partitioned from MongoDB (failover, partition held)', audit, failover, FAILOVER_BOUND_MS);

    // Heal: the writes the partition held (the cut worker's ledger inserts and read-model writes) arrive now.
    const before = await snapshot(db, sessions);
    proxy.heal();
    const back = await within(30_000, () => cut.lines.some((l) => l.includes('back in the worker membership')) && lastAssignment(cut)?.members === 2 && lastAssignment(direct)?.members === 2);
    assert.ok(back, 'the cut worker rejoined once healed');
    await new Promise((r) => setTimeout(r, 2000));
    assert.deepEqual(await snapshot(db, sessions), before, 'the late writes added, rewrote or rolled back nothing');

    // A second round, with the healed worker back on its shards and its session cache from before the partition.
    await Promise.all(sessions.map((s) => load.messages(s, MESSAGES, 0, MESSAGES + 1)));
    const second = await auditUntilSettled(db, sessions, load.acked, 45_000);
    assert.equal(load.abandoned.length, 0, `unacknowledged: ${load.abandoned.join(', ')}`);
    assert.deepEqual(load.internalErrors, []);
    assert.equal(load.acked.size, SESSIONS * MESSAGES * 2);
    assertIntact(second.audit);
  });
});
