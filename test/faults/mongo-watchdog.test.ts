import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { startMongoWire } from '../../infra/services/mongo-wire.js';
import { freePort, type ManagedProcess } from '../../infra/services/process.js';
import { driverFixEvents, installDriverFix, uninstallDriverFix } from '../../src/store/driver-fix.js';
import { connectMongo, type MongoHandle } from '../../src/store/mongo.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The driver's internals this test reaches into to set off the race on purpose (and only this test). */
interface Internals {
  topology: { s: { servers: Map<string, { requestCheck(): void; monitor: { s: { state: string }; connection: { closed: boolean; socket: { destroy(): void } } | null } }> } };
}

/**
 * Sets off issue 16's race at will: the monitor's socket is destroyed, as Node
 * does on its own once the server's FIN has been read, and before its 'close'
 * runs a heartbeat is asked for, as a pool connection's network error asks for
 * one. The driver writes the hello to the dead socket and waits for a 'drain'
 * that never comes: the monitor is wedged, exactly as seen in the fault suite.
 */
async function wedgeMonitor(client: MongoClient): Promise<void> {
  const [server] = (client as unknown as Internals).topology.s.servers.values();
  // Past minHeartbeatFrequencyMS since the last check, so the check runs at once, in this tick.
  await sleep(600);
  const conn = server.monitor.connection;
  assert.ok(conn && !conn.closed, 'the monitor has an open connection');
  conn.socket.destroy();
  server.requestCheck();
}

/**
 * Operations reaching the server, each given `perOpMs`; how long until one succeeded, null if none did in `ms`.
 * An operation started on the wedged client before the watchdog replaced it waits out its server selection
 * (5 s); it is left to do so while a fresh one goes through the handle, which is what a caller sees.
 */
async function answersWithin(op: () => Promise<unknown>, ms: number, perOpMs: number): Promise<number | null> {
  const start = Date.now();
  while (Date.now() - start < ms) {
    const ok = await Promise.race([op().then(() => true, () => false), sleep(perOpMs).then(() => false)]);
    if (ok) return Date.now() - start;
    await sleep(200);
  }
  return null;
}

/** Heartbeats that end (succeed or fail) on `client` from now on. */
function heartbeatsEnded(client: MongoClient): () => number {
  let n = 0;
  client.on('serverHeartbeatSucceeded', () => n++).on('serverHeartbeatFailed', () => n++);
  return () => n;
}

describe('fault: a MongoDB command written to a socket the server has just closed (issue 16)', function () {
  this.timeout(60_000);
  let dir: string;
  let server: ManagedProcess | undefined;
  let client: MongoClient | undefined;
  after(async () => {
    await client?.close();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('fails at once as a closed connection (the driver fix), so the monitor goes on checking', async () => {
    assert.equal(installDriverFix(), true, 'the driver still has the private Connection.writeCommand the fix wraps');
    dir = mkdtempSync(join(tmpdir(), 'troupe-driverfix-'));
    const started = await startMongoWire(dir, () => undefined, { memory: true });
    server = started.proc;
    client = new MongoClient(started.url, { directConnection: true, serverSelectionTimeoutMS: 2000, connectTimeoutMS: 5000, serverMonitoringMode: 'poll' });
    await client.connect();
    const ended = heartbeatsEnded(client);
    const caught: string[] = [];
    const onCaught = (where: string) => caught.push(where);
    driverFixEvents.on('caught', onCaught);
    await wedgeMonitor(client);
    const [srv] = (client as unknown as Internals).topology.s.servers.values();
    for (let i = 0; i < 20 && ended() === 0; i++) await sleep(100);
    driverFixEvents.off('caught', onCaught);
    assert.ok(ended() > 0, 'the heartbeat written to the destroyed socket ended within 2 s');
    assert.deepEqual(caught, ['before_write'], 'the fix caught that write, and reported it');
    assert.notEqual(srv.monitor.s.state, 'monitoring');
    assert.equal((await client.db('admin').command({ ping: 1 })).ok, 1);
  });
});

describe('fault: a MongoDB client whose server monitor is wedged (issue 16)', function () {
  this.timeout(120_000);
  let dir: string;
  let port: number;
  let server: ManagedProcess;
  let handle: MongoHandle | undefined;
  let control: MongoClient | undefined;
  const start = async () => (server = (await startMongoWire(dir, () => undefined, { port })).proc);

  before(async () => {
    // Without the driver fix, so the race wedges the monitor as it did before it: what the watchdog is for.
    uninstallDriverFix();
    dir = mkdtempSync(join(tmpdir(), 'troupe-watchdog-'));
    port = await freePort();
    await start();
  });
  after(async () => {
    installDriverFix();
    await handle?.close();
    await control?.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is replaced once the server is back, and repositories built before that follow the new client', async () => {
    const url = `mongodb://127.0.0.1:${port}/`;
    const replaced: string[] = [];
    const replacedAt: number[] = [];
    handle = await connectMongo(url, 'watchdog', 'troupe-test', { driverFix: false, onReplaced: (r) => (replaced.push(r), replacedAt.push(Date.now())) });
    assert.equal(handle.driverFixed, false, 'connected without the fix, as asked');
    // As a repository holds it: built once, before the fault.
    const docs = handle.db.collection<{ _id: string }>('docs');
    await docs.insertOne({ _id: 'before' });
    // The control: a client with the same options and no watchdog, wedged the same way.
    control = new MongoClient(url, { directConnection: true, serverSelectionTimeoutMS: 2000, connectTimeoutMS: 5000, serverMonitoringMode: 'poll' });
    await control.connect();
    const first = handle.client;
    await Promise.all([wedgeMonitor(first), wedgeMonitor(control)]);
    const wedgedAt = Date.now();

    // Stopped under load: writes in flight fail with the closed connection's error, which marks the server
    // Unknown and pauses the pool (a refused connection alone does not).
    const pad = 'x'.repeat(2048);
    let loading = true;
    const writers = [first, control].flatMap((client) =>
      Array.from({ length: 8 }, async (_, w) => {
        const col = client.db('watchdog').collection('load');
        while (loading) await col.insertMany(Array.from({ length: 50 }, (_, i) => ({ w, i, pad }))).catch(() => sleep(50));
      }),
    );
    await sleep(300);
    await server.stop();
    loading = false;
    // Bounded: a write caught by the same race never settles.
    await Promise.race([Promise.all(writers), sleep(6000)]);
    await start();
    const back = Date.now();

    const took = await answersWithin(() => docs.findOne({ _id: 'before' }), 30_000, 1000);
    console.log(`      wedged ${back - wedgedAt} ms before the server came back; replaced ${replacedAt.map((t) => t - back).join(', ') || 'never'} ms after it; answered after ${took} ms`);
    assert.ok(took !== null, `no answer through the handle 30 s after the server came back; replacements: ${replaced.join('; ') || 'none'}`);
    assert.ok(took <= 10_000, `answered ${took} ms after the server came back; the goal is 10 s`);
    assert.equal(replaced.length, 1, replaced.join('; '));
    assert.match(replaced[0], /wedged \(heartbeat in flight/);
    assert.notEqual(handle.client, first, 'the handle now holds a new client');
    assert.deepEqual(await docs.findOne({ _id: 'before' }), { _id: 'before' });
    await docs.insertOne({ _id: 'after' });
    // The wedge was real: the client without a watchdog still cannot select the server it answers.
    await assert.rejects(control.db('watchdog').command({ ping: 1 }), /Server selection timed out|closed/);
  });
});
