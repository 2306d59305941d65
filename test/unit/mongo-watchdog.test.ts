import assert from 'node:assert/strict';
import { Collection, Db, MongoClient } from 'mongodb';
import { liveDb } from '../../src/store/live-db.js';
import { HeartbeatTracker } from '../../src/store/mongo-watchdog.js';

describe('MongoDB watchdog: telling a wedged server monitor from a slow one', () => {
  const opts = { connectTimeoutMS: 5000, heartbeatFrequencyMS: 10_000 };
  const A = '127.0.0.1:27017';

  it('a polled heartbeat in flight past its socket timeout is a stall; one that ended, failed or not, is progress', () => {
    const t = new HeartbeatTracker(opts);
    t.started(A, false, 1000);
    assert.equal(t.stalled(6900), null, 'within connectTimeoutMS and the slack');
    assert.match(t.stalled(7100)?.reason ?? '', /heartbeat in flight for 6100 ms/);
    assert.equal(t.stalled(7100)?.startedAt, 1000);
    t.ended(A, 7200);
    assert.equal(t.stalled(7300), null);
  });

  it('an awaited (streaming) heartbeat may first wait heartbeatFrequencyMS', () => {
    const t = new HeartbeatTracker(opts);
    t.started(A, true, 0);
    assert.equal(t.stalled(15_900), null);
    assert.ok(t.stalled(16_100));
  });

  it('a monitor that stops starting heartbeats is a stall too, counted from the end of the last one', () => {
    const t = new HeartbeatTracker(opts);
    assert.equal(t.stalled(15_000), null, 'no server seen yet');
    t.started(A, false, 100);
    t.ended(A, 200);
    assert.equal(t.stalled(16_100), null, 'the next one is due within heartbeatFrequencyMS');
    assert.match(t.stalled(16_300)?.reason ?? '', /no heartbeat for 16100 ms/);
  });

  it('names the stalled server among several', () => {
    const t = new HeartbeatTracker(opts);
    t.started('a:1', false, 0);
    t.ended('a:1', 10);
    t.started('b:1', false, 0);
    assert.equal(t.stalled(7000)?.address, 'b:1');
  });
});

describe('MongoDB live Db: repositories follow a replaced client', () => {
  it('a Collection taken before the replacement resolves to the new client, its methods bound to it', async () => {
    // Clients are not connected: building Dbs and Collections needs no server.
    const [one, two] = [new MongoClient('mongodb://127.0.0.1:1/'), new MongoClient('mongodb://127.0.0.1:2/')];
    let current: Db = one.db('first');
    const db = liveDb(() => current);
    const col = db.collection<{ _id: string }>('docs');
    assert.ok(col instanceof Collection);
    assert.ok(db instanceof Db);
    assert.equal(col.dbName, 'first');
    assert.equal(db.databaseName, 'first');
    assert.equal(db.collection('docs'), col, 'one proxy per name');
    current = two.db('second');
    assert.equal(col.dbName, 'second');
    assert.equal(col.namespace, 'second.docs');
    assert.equal(db.databaseName, 'second');
    // A method called through the proxy runs on the current client's collection (Dbs are named apart).
    const cursor = col.find({});
    assert.equal(cursor.namespace.toString(), 'second.docs');
    await cursor.close();
    await Promise.all([one.close(), two.close()]);
  });
});
