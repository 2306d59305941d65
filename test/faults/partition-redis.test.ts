import assert from 'node:assert/strict';
import type { TcpProxy } from '../support/tcp-proxy.js';
import { auditUntilSettled, recoveryMs } from './support/audit.js';
import { Cluster } from './support/cluster.js';
import { lastAssignment } from '../support/shard-assignment.js';
import { PARTITION_SHARDS, startSplit, trafficUnderWay, within } from './support/partition.js';
import { assertIntact, FULL, record } from './support/summary.js';

const SHARDS = PARTITION_SHARDS;
const SESSIONS = FULL ? 40 : 16;
const MESSAGES = 3;

/**
 * A partition, not a kill: the worker `cut` reaches Redis through a proxy
 * that stops every byte both ways while it stays alive, its sockets open and
 * MongoDB in reach. Its heartbeats stop arriving and its job locks lapse, so
 * the worker `direct` takes its shards and replays its turns, while `cut`
 * still believes it owns them. When the partition heals, everything `cut`
 * held (lock renewals, completions, hand-offs) arrives late; the ledger's
 * sequence fence and the lock tokens must make all of it harmless.
 */
describe('fault: a worker partitioned from Redis mid-turn', function () {
  let c: Cluster;
  let proxy: TcpProxy;
  let agentId: string;
  before(async () => {
    ({ c, proxy, agentId } = await startSplit('REDIS_URL'));
  });
  after(async () => {
    await c?.close();
    await proxy?.close();
  });

  it(`moves its shards to the other worker while partitioned, and heals with nothing lost, duplicated or rewritten (${SESSIONS} sessions x ${MESSAGES} messages, twice)`, async () => {
    const cut = c.procs.get('cut')!;
    const direct = c.procs.get('direct')!;
    const { load, sessions, onCut, traffic, db } = await trafficUnderWay(c, agentId, SESSIONS, MESSAGES);
    const events = db.collection('events');
    proxy.blackhole();
    const partitioned = Date.now();
    const doneOnCut = await db.collection('messages').countDocuments({ session_id: { $in: onCut }, status: 'completed' });
    assert.ok(doneOnCut < onCut.length * MESSAGES, 'the partition caught work on the cut worker’s shards');

    // The other worker drops the silent member once its heartbeat lapses and runs every shard.
    const takeover = await within(20_000, () => lastAssignment(direct)?.members === 1);
    assert.ok(takeover, 'the other worker took the partitioned worker’s shards');
    await traffic;
    const { audit, settledAt } = await auditUntilSettled(db, sessions, load.acked, 45_000);
    assert.ok(proxy.partitioned && cut.child.exitCode === null, 'all of it while the cut worker was alive and still partitioned');
    assert.equal(load.abandoned.length, 0, `unacknowledged: ${load.abandoned.join(', ')}`);
    assert.deepEqual(load.internalErrors, [], 'a partition of one worker is never a 500');
    const failover = await recoveryMs(db, load.firstTried, partitioned);
    record('worker partitioned from Redis (failover, partition held)', audit, failover);
    process.stdout.write(`      takeover ${takeover.ms} ms after the partition began, every caught message terminal ${failover} ms after it, settled ${settledAt! - partitioned} ms after it\n`);

    // Heal: what the cut worker held arrives now, late. It must add nothing to the ledger, and change nothing in it.
    const before = await events.find({ session_id: { $in: sessions } }, { projection: { _id: 1, created_at: 1 } }).sort({ _id: 1 }).toArray();
    proxy.heal();
    const rejoined = await within(20_000, () => {
      const a = lastAssignment(direct);
      return a?.members === 2 && lastAssignment(cut)!.members === 2 && a.shards.length < SHARDS;
    });
    assert.ok(rejoined, 'the cut worker rejoined once healed, and took shards back');
    // Let the late commands land (lock renewals and completions refused for their old tokens, hand-offs deduplicated).
    await new Promise((r) => setTimeout(r, 2000));
    const afterHeal = await events.find({ session_id: { $in: sessions } }, { projection: { _id: 1, created_at: 1 } }).sort({ _id: 1 }).toArray();
    assert.deepEqual(afterHeal, before, 'the healed worker’s late work added or rewrote no event');

    // A second round: the healed worker runs its shards again from the session copies it cached before the
    // partition, which the other worker has since moved on; the sequence fence makes it catch up, never overwrite.
    const round2 = Promise.all(sessions.map((s) => load.messages(s, MESSAGES, 0, MESSAGES + 1)));
    await round2;
    const second = await auditUntilSettled(db, sessions, load.acked, 45_000);
    assert.equal(load.abandoned.length, 0, `unacknowledged: ${load.abandoned.join(', ')}`);
    assert.deepEqual(load.internalErrors, []);
    assert.equal(load.acked.size, SESSIONS * MESSAGES * 2);
    assert.equal(cut.child.exitCode, null, 'the cut worker is still running');
    assertIntact(second.audit);
  });
});
