import assert from 'node:assert/strict';
import type { MongoKind } from '../../infra/services/mongo-wire.js';
import { auditUntilSettled, recoveryMs } from './support/audit.js';
import { Cluster } from './support/cluster.js';
import { Load, scriptedAgent } from './support/load.js';
import { FULL, record } from './support/summary.js';

const SESSIONS = FULL ? 40 : 12;
const MESSAGES = 3;

/**
 * SIGTERM runs on the launcher's default server. SIGKILL runs on FerretDB
 * (SQLite): a store that acknowledges a write only once it is committed.
 * mongo-java-server's H2 store commits about once a second, so a kill -9
 * loses the writes of that last second, acknowledged ones too, whatever the
 * client does; that is the store's durability, not something Troupe can fix.
 */
const CASES: [NodeJS.Signals, MongoKind | undefined][] = [
  ['SIGTERM', undefined],
  ['SIGKILL', 'ferretdb'],
];

/**
 * Open bug (docs/reliability.md): after a SIGTERM restart of mongo-java-server under load, a worker's MongoDB
 * client sometimes never selects the server again (every operation fails server selection with the old
 * connection's error) until the process restarts. It fails about one run in three, so `npm test` leaves the
 * case out rather than fail other work at random; `npm run test:faults` runs it and shows the bug.
 */
const OPEN_BUG = !FULL && process.env.TROUPE_FAULT_MONGO_SIGTERM !== '1';

for (const [signal, kind] of CASES) {
  describe(`fault: the MongoDB-wire server restarted mid-load (${signal})`, function () {
    let c: Cluster;
    let agentId: string;
    before(async function () {
      if (signal === 'SIGTERM' && OPEN_BUG) {
        process.stderr.write('      (left out at CI size: the open MongoDB-restart bug in docs/reliability.md; TROUPE_FAULT_MONGO_SIGTERM=1 runs it)\n');
        this.skip();
      }
      c = await Cluster.start({ ownMongo: true, mongoKind: kind });
      await c.start('web-1', 'web');
      await c.start('worker-1', 'worker');
      agentId = await scriptedAgent(await c.db());
    });
    after(async () => c?.close());

    it(`${signal} on ${kind ?? 'the default server'}, down 1 s: nothing acknowledged is lost, duplicated or stranded`, async () => {
      const load = new Load({ webUrls: () => c.webUrls(), apiKey: c.apiKey });
      const sessions = await Promise.all(Array.from({ length: SESSIONS }, () => load.session(agentId)));
      const traffic = Promise.all(sessions.map((s) => load.messages(s, MESSAGES, 50)));
      const db = await c.db();
      for (let i = 0; i < 400 && (await db.collection('events').countDocuments({ session_id: { $in: sessions } })) < SESSIONS * 2; i++) await new Promise((r) => setTimeout(r, 25));
      const back = await c.restartMongo(signal, 1000);
      await traffic;
      const { audit } = await auditUntilSettled(db, sessions, load.acked, 60_000);
      assert.equal(load.abandoned.length, 0, `unacknowledged: ${load.abandoned.join(', ')}`);
      assert.deepEqual(load.internalErrors, [], 'an outage is a 503 to retry, never a 500');
      record(`MongoDB-wire server ${signal} (${c.mongoKind})`, audit, await recoveryMs(db, load.firstTried, back));
    });
  });
}
