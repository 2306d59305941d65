import assert from 'node:assert/strict';
import { auditUntilSettled } from './support/audit.js';
import { Cluster } from './support/cluster.js';
import { Load, scriptedAgent } from './support/load.js';
import { FULL, record } from './support/summary.js';

const SESSIONS = FULL ? 40 : 12;
const MESSAGES = 3;

describe('fault: the MongoDB-wire server restarted mid-load', function () {
  let c: Cluster;
  let agentId: string;
  before(async () => {
    c = await Cluster.start({ ownMongo: true });
    await c.start('web-1', 'web');
    await c.start('worker-1', 'worker');
    agentId = await scriptedAgent(await c.db());
  });
  after(async () => c?.close());

  it('SIGTERM, down 1 s: nothing acknowledged is lost, duplicated or stranded', async () => {
    const load = new Load({ webUrls: () => c.webUrls(), apiKey: c.apiKey });
    const sessions = await Promise.all(Array.from({ length: SESSIONS }, () => load.session(agentId)));
    const traffic = Promise.all(sessions.map((s) => load.messages(s, MESSAGES, 50)));
    const db = await c.db();
    for (let i = 0; i < 400 && (await db.collection('events').countDocuments({ session_id: { $in: sessions } })) < SESSIONS * 2; i++) await new Promise((r) => setTimeout(r, 25));
    const back = await c.restartMongo('SIGTERM', 1000);
    await traffic;
    const { audit, settledAt } = await auditUntilSettled(db, sessions, load.acked, 60_000);
    assert.equal(load.abandoned.length, 0, `unacknowledged: ${load.abandoned.join(', ')}`);
    record('MongoDB-wire server restart (SIGTERM)', audit, settledAt && settledAt - back);
  });
});
