import assert from 'node:assert/strict';
import type { MongoKind } from '../../infra/services/mongo-wire.js';
import { auditUntilSettled, recoveryMs } from './support/audit.js';
import { Cluster } from './support/cluster.js';
import { Load, scriptedAgent } from './support/load.js';
import { FULL, record } from './support/summary.js';

const SESSIONS = FULL ? 40 : 12;
const MESSAGES = 3;

/**
 * Both signals run on the launcher's default server (on its file, not in
 * memory): what `npm start` runs must keep every acknowledged write through a
 * kill -9 too. mongo-java-server answers a write only once a group commit has
 * synced it to its H2 file (infra/mongo-java-server, GroupCommit); before
 * that, H2 committed once a second and a kill -9 lost the last second's
 * acknowledged messages (docs/reliability.md). The full-size run also kills
 * FerretDB (SQLite), the matrix's other server.
 */
const CASES: [NodeJS.Signals, MongoKind | undefined][] = [
  ['SIGTERM', undefined],
  ['SIGKILL', undefined],
  ...(FULL ? [['SIGKILL', 'ferretdb'] as [NodeJS.Signals, MongoKind]] : []),
];

for (const [signal, kind] of CASES) {
  describe(`fault: the MongoDB-wire server restarted mid-load (${signal}${kind ? ` on ${kind}` : ''})`, function () {
    let c: Cluster;
    let agentId: string;
    before(async function () {
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
      if (signal === 'SIGKILL') {
        // Right after an acknowledgement, with most messages still to come: a store that acknowledged before its
        // data was on disk (H2 committing once a second) loses the latest ones here, every time.
        for (let i = 0; i < 2000 && load.acked.size < SESSIONS; i++) await new Promise((r) => setTimeout(r, 5));
      } else {
        for (let i = 0; i < 400 && (await db.collection('events').countDocuments({ session_id: { $in: sessions } })) < SESSIONS * 2; i++) await new Promise((r) => setTimeout(r, 25));
      }
      const back = await c.restartMongo(signal, 1000);
      await traffic;
      const { audit } = await auditUntilSettled(db, sessions, load.acked, 60_000);
      assert.equal(load.abandoned.length, 0, `unacknowledged: ${load.abandoned.join(', ')}`);
      assert.deepEqual(load.internalErrors, [], 'an outage is a 503 to retry, never a 500');
      record(`MongoDB-wire server ${signal} (${c.mongoKind})`, audit, await recoveryMs(db, load.firstTried, back));
    });
  });
}
