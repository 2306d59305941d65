import assert from 'node:assert/strict';
import { MongoClient, type Db } from 'mongodb';
import { RateLimitError } from '../../src/domain/errors.js';
import { OrgLimitsLookup } from '../../src/lib/limits/org-limits.js';
import { RunningSessionGate } from '../../src/lib/limits/running-sessions.js';
import { Metrics } from '../../src/lib/metrics/metrics.js';
import { ensureIndexes } from '../../src/store/indexes.js';
import { OrgStore } from '../../src/store/orgs.js';
import { SessionStore } from '../../src/store/sessions.js';
import { requiredEnv, uniqueName } from '../support/harness.js';

/**
 * The running-session cap counts the org's running sessions in the store. Far
 * below the cap a count is reused for a second (a count is a collection scan on
 * mongo-java-server); near the cap, and after a batch, every message counts.
 */
describe('running-session gate: when it counts', () => {
  let client: MongoClient;
  let db: Db;
  const metrics = new Metrics('test');

  before(async () => {
    client = new MongoClient(requiredEnv('MONGODB_URL'), { directConnection: true });
    await client.connect();
    db = client.db(uniqueName('troupe_gate'));
    await ensureIndexes(db);
  });
  after(async () => {
    await db?.dropDatabase();
    await client?.close();
  });

  const gate = (cap: number) => new RunningSessionGate(new SessionStore(db), new OrgLimitsLookup(new OrgStore(db), { api_per_min: 0, api_key_per_min: 0, routing_per_min: 0, routing_key_per_min: 0, running_sessions: cap }), metrics);
  /** Sessions another process started: written straight to the read model. */
  const startElsewhere = async (orgId: string, n: number) =>
    db.collection('sessions').insertMany(Array.from({ length: n }, (_, i) => ({ _id: `${orgId}_s${i}`, org_id: orgId, status: 'running' })) as never[]);
  const refused = (p: Promise<void>) => assert.rejects(p, (err: unknown) => err instanceof RateLimitError && err.code === 'concurrency_limited');

  it('far below the cap reuses its count for a second, then counts again', async () => {
    const g = gate(40);
    const org = uniqueName('org');
    await g.admit(org, null);
    await startElsewhere(org, 40);
    // The last count saw 0 running and this process started 1: far below a quarter of 40, so no count yet.
    await g.admit(org, null);
    await new Promise((r) => setTimeout(r, 1100));
    await refused(g.admit(org, null));
  });

  it('under steady traffic renews its count in the background, before it expires', async () => {
    const store = new SessionStore(db);
    const counts: Promise<number>[] = [];
    const counting = Object.assign(Object.create(store) as SessionStore, {
      countRunning: (orgId: string, upTo: number) => {
        const c = store.countRunning(orgId, upTo);
        counts.push(c);
        return c;
      },
    });
    const g = new RunningSessionGate(counting, new OrgLimitsLookup(new OrgStore(db), { api_per_min: 0, api_key_per_min: 0, routing_per_min: 0, routing_key_per_min: 0, running_sessions: 40 }), metrics);
    const org = uniqueName('org');
    const t0 = Date.now();
    await g.admit(org, null, t0);
    assert.equal(counts.length, 1);
    await startElsewhere(org, 40);
    await g.admit(org, null, t0 + 200); // a fresh count: no recount
    assert.equal(counts.length, 1);
    await g.admit(org, null, t0 + 600); // admitted on the count it has, which is renewed meanwhile
    assert.equal(counts.length, 2);
    await counts[1];
    await new Promise((r) => setImmediate(r));
    // The renewed count sees the 40 started elsewhere, still within the first count's second.
    await refused(g.admit(org, null, t0 + 700));
  });

  it('refuses a message whose session status is not at hand only if a fresh read shows the session not running', async () => {
    const g = gate(4);
    const org = uniqueName('org');
    await startElsewhere(org, 4);
    let reads = 0;
    const current = (status: string) => async () => (reads++, { status });
    await g.admitMessage(org, current('running'));
    await refused(g.admitMessage(org, current('idle')));
    assert.equal(reads, 2);
    const roomy = gate(40);
    await roomy.admitMessage(org, current('idle'));
    assert.equal(reads, 2, 'below the cap the session is not read');
  });

  it('counts every message near the cap, and after a batch', async () => {
    const g = gate(4);
    const org = uniqueName('org');
    await g.admit(org, null);
    await startElsewhere(org, 4);
    // One started here is already a quarter of 4: this message is counted, and refused.
    await refused(g.admit(org, null));
    await g.admit(org, { status: 'running' }); // a message to a running session adds nothing and is never refused

    const big = gate(40);
    const other = uniqueName('org');
    await big.admit(other, null);
    await startElsewhere(other, 40);
    big.forget(other); // what POST /v1/session-batches does after writing a batch
    await refused(big.admit(other, null));
  });
});
