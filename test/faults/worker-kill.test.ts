import assert from 'node:assert/strict';
import { auditUntilSettled, recoveryMs } from './support/audit.js';
import { Cluster } from './support/cluster.js';
import { Load, scriptedAgent } from './support/load.js';
import { FULL, record } from './support/summary.js';

const RUNS = FULL ? 3 : 2;
const SESSIONS = FULL ? 50 : 12;
const MESSAGES = 3;

describe('fault: a worker SIGKILLed mid-turn', function () {
  let c: Cluster;
  let agentId: string;
  before(async () => {
    c = await Cluster.start();
    await c.start('web-1', 'web');
    agentId = await scriptedAgent(await c.db());
  });
  after(async () => c?.close());

  for (let run = 1; run <= RUNS; run++) {
    it(`run ${run}: loses, duplicates and strands nothing (${SESSIONS} sessions x ${MESSAGES} messages)`, async () => {
      const worker = `worker-${run}`;
      await c.start(worker, 'worker');
      const load = new Load({ webUrls: () => c.webUrls(), apiKey: c.apiKey });
      const sessions = await Promise.all(Array.from({ length: SESSIONS }, () => load.session(agentId)));
      const traffic = Promise.all(sessions.map((s) => load.messages(s, MESSAGES)));
      const db = await c.db();
      // Kill once turns are demonstrably under way: some recorded, most not.
      for (let i = 0; i < 400 && (await db.collection('events').countDocuments({ session_id: { $in: sessions } })) < SESSIONS; i++) await new Promise((r) => setTimeout(r, 25));
      await c.kill(worker, 'SIGKILL');
      const done = await db.collection('messages').countDocuments({ session_id: { $in: sessions }, status: 'completed' });
      assert.ok(done < SESSIONS * MESSAGES, 'the worker died with work outstanding');
      await c.start(`${worker}-replacement`, 'worker');
      const back = Date.now();
      await traffic;
      const { audit } = await auditUntilSettled(db, sessions, load.acked, 60_000);
      assert.equal(load.abandoned.length, 0, `unacknowledged: ${load.abandoned.join(', ')}`);
      assert.deepEqual(load.internalErrors, [], 'an outage is a 503 to retry, never a 500');
      assert.equal(load.acked.size, SESSIONS * MESSAGES);
      record('worker SIGKILL mid-turn', audit, await recoveryMs(db, load.firstTried, back));
      await c.kill(`${worker}-replacement`, 'SIGTERM');
    });
  }
});
