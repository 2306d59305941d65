import assert from 'node:assert/strict';
import { auditUntilSettled, recoveryMs } from './support/audit.js';
import { Cluster } from './support/cluster.js';
import { Load, scriptedAgent } from './support/load.js';
import { FULL, record } from './support/summary.js';

const SESSIONS = FULL ? 50 : 12;
const MESSAGES = FULL ? 4 : 3;

for (const aof of [true, false]) {
  describe(`fault: Redis restarted mid-load, AOF ${aof ? 'on' : 'off'}`, function () {
    let c: Cluster;
    let agentId: string;
    before(async () => {
      c = await Cluster.start({ aof });
      await c.start('web-1', 'web');
      await c.start('worker-1', 'worker');
      agentId = await scriptedAgent(await c.db());
    });
    after(async () => c?.close());

    for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
      it(`${signal}: every acknowledged message completes, with no restart of Troupe's processes`, async () => {
        const load = new Load({ webUrls: () => c.webUrls(), apiKey: c.apiKey });
        const sessions = await Promise.all(Array.from({ length: SESSIONS }, () => load.session(agentId)));
        const traffic = Promise.all(sessions.map((s) => load.messages(s, MESSAGES, 50)));
        const db = await c.db();
        for (let i = 0; i < 400 && (await db.collection('events').countDocuments({ session_id: { $in: sessions } })) < SESSIONS * 2; i++) await new Promise((r) => setTimeout(r, 25));
        const back = await c.restartRedis(signal, 1000);
        await traffic;
        const { audit } = await auditUntilSettled(db, sessions, load.acked, 60_000);
        assert.equal(load.abandoned.length, 0, `unacknowledged: ${load.abandoned.join(', ')}`);
        assert.deepEqual(load.internalErrors, [], 'an outage is a 503 to retry, never a 500');
        assert.deepEqual([...c.procs.keys()], ['web-1', 'worker-1'], 'the same processes carried on');
        record(`Redis ${signal}, AOF ${aof ? 'on' : 'off'}`, audit, await recoveryMs(db, load.firstTried, back));
      });
    }
  });
}
