import assert from 'node:assert/strict';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { MongoClient, ObjectId } from 'mongodb';
import { startLocalServices, type LocalServices } from '../../infra/services/local-services.js';
import { MONGO_KINDS, type MongoKind } from '../../infra/services/mongo-wire.js';
import { spawn } from 'node:child_process';
import { isAlive } from '../../infra/services/process.js';
import { startHarness, type Harness } from '../support/harness.js';
import { childrenOf, ended } from '../support/proc.js';
import { FORMAT_0_DB, formatZeroDocuments } from '../support/store-format-0.js';
import { until } from '../support/wait.js';

/**
 * These tests start their own Redis and MongoDB-wire server with the launcher,
 * so they can stop them without disturbing the shared test services.
 */
/** The server this leg of the matrix runs, so the launcher is tested on it too. */
const legKind = (MONGO_KINDS as readonly string[]).includes(process.env.TROUPE_TEST_MONGO_KIND ?? '') ? (process.env.TROUPE_TEST_MONGO_KIND as MongoKind) : undefined;

describe('local services launcher and readiness', function () {
  this.timeout(120_000);
  let services: LocalServices;
  let h: Harness;

  before(async () => {
    services = await startLocalServices({ log: () => undefined, mongoKind: legKind });
    h = await startHarness({ roles: ['web', 'router'], env: { MONGODB_URL: services.mongodbUrl, REDIS_URL: services.redisUrl } });
  });
  after(async () => {
    await h?.close().catch(() => undefined);
    await services?.stop();
  });

  it('starts both servers on free ports', async () => {
    assert.equal(services.processes.length, 2);
    for (const p of services.processes) assert.ok(isAlive(p.pid), `${p.name} runs`);
    assert.notEqual(new URL(services.redisUrl).port, new URL(services.mongodbUrl).port);
    assert.equal((await fetch(`${h.baseUrl}/readyz`)).status, 200);
  });

  it('reports Redis down quickly and clearly', async () => {
    const redis = services.processes.find((p) => p.name === 'redis-server')!;
    await redis.stop();
    const started = Date.now();
    const res = await fetch(`${h.baseUrl}/readyz`);
    assert.equal(res.status, 503);
    const body = (await res.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'not_ready');
    assert.match(body.error.message, /redis/);
    assert.doesNotMatch(body.error.message, /mongodb:/);
    assert.ok(Date.now() - started < 3000, 'readiness answers within the probe timeout');
  });

  it('reports Mongo down quickly and clearly', async () => {
    const mongo = services.processes.find((p) => p.name !== 'redis-server')!;
    await mongo.stop();
    const started = Date.now();
    const res = await fetch(`${h.baseUrl}/readyz`);
    assert.equal(res.status, 503);
    assert.match(((await res.json()) as { error: { message: string } }).error.message, /mongodb: /);
    assert.ok(Date.now() - started < 3000, 'readiness answers within the probe timeout');
  });

  it('stop() leaves no process and no data directory behind', async () => {
    const pids = services.processes.map((p) => p.pid);
    await h.running.close();
    await services.stop();
    await services.stop();
    for (const pid of pids) assert.equal(isAlive(pid), false, `pid ${pid} is gone`);
    assert.ok(!services.processes.some((p) => existsSync(`/proc/${p.pid}`)));
  });
});

describe('local services launcher: a launcher killed outright', function () {
  this.timeout(30_000);

  it('leaves no server behind: the watchdog ends it within seconds of a SIGKILL', async () => {
    // A launcher in a process of its own (redis-server only: the quickest server to start), killed with no chance
    // to clean up. The server is in a process group of its own, so nothing but the watchdog can end it.
    const dir = mkdtempSync(join(tmpdir(), 'troupe-sigkill-'));
    const script = `require(process.argv[1]).startRedis(process.argv[2], () => {}).then((r) => console.log(JSON.stringify({ pid: r.proc.pid })))`;
    const launcher = spawn(process.execPath, ['-e', script, resolve(__dirname, '../../infra/services/redis-server.js'), dir], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      let out = '';
      launcher.stdout.on('data', (d: Buffer) => (out += d.toString()));
      const { pid } = await until(async () => (out.includes('\n') ? (JSON.parse(out) as { pid: number }) : undefined), 15_000);
      assert.ok(!ended(pid), 'redis-server runs');
      launcher.kill('SIGKILL');
      const started = Date.now();
      await until(async () => ended(pid), 10_000);
      assert.ok(Date.now() - started < 6000, `ended ${Date.now() - started} ms after the launcher`);
    } finally {
      launcher.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
  it('ends the server the moment the launcher dies, by a parent-death signal, without the watchdog', async () => {
    // The kernel signals the server when its launcher dies (setpriv --pdeathsig): no polling, and nothing else to
    // keep alive. The watchdog is killed first here, so only that signal can end the server.
    const dir = mkdtempSync(join(tmpdir(), 'troupe-pdeathsig-'));
    const script = `require(process.argv[1]).startRedis(process.argv[2], () => {}).then((r) => console.log(JSON.stringify({ pid: r.proc.pid })))`;
    const launcher = spawn(process.execPath, ['-e', script, resolve(__dirname, '../../infra/services/redis-server.js'), dir], { stdio: ['ignore', 'pipe', 'inherit'] });
    let pid = 0;
    try {
      let out = '';
      launcher.stdout.on('data', (d: Buffer) => (out += d.toString()));
      ({ pid } = await until(async () => (out.includes('\n') ? (JSON.parse(out) as { pid: number }) : undefined), 15_000));
      const watchdogs = childrenOf(launcher.pid!).filter((p) => p.comm === 'sh');
      assert.equal(watchdogs.length, 1, JSON.stringify(childrenOf(launcher.pid!)));
      process.kill(watchdogs[0].pid, 'SIGKILL');
      await until(async () => ended(watchdogs[0].pid), 5000);
      launcher.kill('SIGKILL');
      const started = Date.now();
      await until(async () => ended(pid), 5000).catch(() => undefined);
      assert.ok(ended(pid), 'redis-server still runs with its launcher and watchdog gone');
      assert.ok(Date.now() - started < 2000, `ended ${Date.now() - started} ms after the launcher`);
    } finally {
      launcher.kill('SIGKILL');
      if (pid && !ended(pid)) process.kill(pid, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('local services launcher: data kept across a restart', function () {
  this.timeout(120_000);
  let dataDir: string;
  before(function () {
    // With MONGODB_URL the launcher starts no MongoDB-wire server to restart.
    if (!legKind) this.skip();
    dataDir = mkdtempSync(join(tmpdir(), 'troupe-restart-'));
  });
  after(() => {
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  async function withMongo<T>(fn: (client: MongoClient) => Promise<T>, dir = dataDir): Promise<T> {
    const services = await startLocalServices({ dataDir: dir, mongoKind: legKind, log: () => undefined });
    const client = new MongoClient(services.mongodbUrl, { directConnection: true });
    try {
      await client.connect();
      return await fn(client);
    } finally {
      await client.close();
      await services.stop();
    }
  }

  it('keeps documents and indexes written before the server stopped (npm start restarts)', async () => {
    await withMongo(async (client) => {
      const agents = client.db('troupe_restart').collection<{ _id: string; name: string }>('agents');
      await agents.createIndex({ name: 1 }, { unique: true, name: 'name_unique' });
      await agents.insertMany([{ _id: 'agt_1', name: 'first' }, { _id: 'agt_2', name: 'second' }]);
    });
    assert.ok(existsSync(join(dataDir, 'mongo')), 'data stays in the data directory');
    await withMongo(async (client) => {
      const agents = client.db('troupe_restart').collection<{ _id: string; name: string }>('agents');
      assert.deepEqual(await agents.find({}).sort({ _id: 1 }).toArray(), [{ _id: 'agt_1', name: 'first' }, { _id: 'agt_2', name: 'second' }]);
      await assert.rejects(agents.insertOne({ _id: 'agt_3', name: 'first' }), { code: 11000 }, 'the unique index survived too');
    });
  });

  it('keeps the data folder its owner\'s alone: 0700, nothing in it open to others, also a folder made before (npm start)', async () => {
    // Was 0755 with troupe.mv and Redis's AOF at 0644: message text readable by every user of the machine.
    const dir = join(dataDir, 'modes');
    mkdirSync(join(dir, 'mongo'), { recursive: true });
    chmodSync(dir, 0o755);
    chmodSync(join(dir, 'mongo'), 0o755);
    writeFileSync(join(dir, 'left-from-before.json'), '{}');
    chmodSync(join(dir, 'left-from-before.json'), 0o644);
    await withMongo(async (client) => {
      await client.db('troupe_modes').collection('events').insertOne({ _id: 'evt_1' as never, text: 'private' });
    }, dir);
    const open: string[] = [];
    const walk = (d: string): string[] => readdirSync(d).flatMap((n) => [join(d, n), ...(lstatSync(join(d, n)).isDirectory() ? walk(join(d, n)) : [])]);
    const entries = walk(dir);
    for (const p of entries) if (lstatSync(p).mode & 0o077) open.push(`${p} ${(lstatSync(p).mode & 0o777).toString(8)}`);
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    assert.deepEqual(open, []);
    assert.ok(entries.some((p) => p.includes('/redis/') && statSync(p).isFile()), `Redis wrote its AOF: ${entries.join(', ')}`);
    assert.ok(entries.some((p) => p.includes('/mongo/') && statSync(p).isFile()), `the MongoDB-wire server wrote its data: ${entries.join(', ')}`);
  });

  it('finds every key of a unique index, and refuses its duplicates, from a file written before a restart', async () => {
    // Enough keys for several B-tree pages, so lookups after the restart search pages read back from the file
    // (mongo-java-server's H2 index maps order keys by Troupe's own comparison, see infra/mongo-java-server).
    const docs = Array.from({ length: 600 }, (_, i) => ({ _id: `evt_${i}`, session_id: `sess_${i % 40}`, sequence_number: Math.floor(i / 40) + 1 }));
    const events = (client: MongoClient) => client.db('troupe_restart').collection<(typeof docs)[number]>('events');
    await withMongo(async (client) => {
      await events(client).createIndex({ session_id: 1, sequence_number: 1 }, { unique: true, name: 'session_sequence_unique' });
      await events(client).insertMany(docs);
    });
    await withMongo(async (client) => {
      for (const d of docs.filter((_, i) => i % 7 === 0)) {
        assert.deepEqual(await events(client).findOne({ _id: d._id }), d);
        assert.deepEqual(await events(client).findOne({ session_id: d.session_id, sequence_number: d.sequence_number }), d);
      }
      assert.equal(await events(client).findOne({ session_id: 'sess_1', sequence_number: 99 }), null);
      await assert.rejects(events(client).insertOne({ _id: 'evt_x', session_id: 'sess_3', sequence_number: 2 }), { code: 11000 });
      await assert.rejects(events(client).insertOne({ ...docs[5], session_id: 'other' }), { code: 11000 }, 'the _id index too');
      await events(client).insertOne({ _id: 'evt_y', session_id: 'sess_3', sequence_number: 99 });
    });
  });

  it('opens a file written before documents were stored as BSON, and keeps it across a further restart', async function () {
    // The fixture is a mongo-java-server H2 file (see test/support/store-format-0.ts).
    if (legKind !== 'mongo-java-server') this.skip();
    const dir = join(dataDir, 'format-0');
    mkdirSync(join(dir, 'mongo'), { recursive: true });
    const fixture = resolve(__dirname, '../../../test/fixtures/mongo-java-server/format-0.mv.gz');
    writeFileSync(join(dir, 'mongo', 'troupe.mv'), gunzipSync(readFileSync(fixture)));
    const { events, chunks } = formatZeroDocuments();
    const added = { _id: 'evt_new', session_id: 'sess_new', sequence_number: 1, at: new Date(Date.UTC(2026, 10, 24)), payload: { parts: [] } };
    const eventsOf = (client: MongoClient) => client.db(FORMAT_0_DB).collection<{ _id: string; [field: string]: unknown }>('events');
    const check = async (client: MongoClient, expected: object[]) => {
      const db = client.db(FORMAT_0_DB);
      assert.deepEqual(await eventsOf(client).find({}).sort({ _id: 1 }).toArray(), expected, 'every document, every type, as written');
      assert.deepEqual(await db.collection('fs.chunks').find({}).sort({ _id: 1 }).toArray(), chunks);
      assert.deepEqual(await eventsOf(client).findOne({ session_id: 'sess_3', sequence_number: 4 }), events[33], 'the unique index answers');
      assert.deepEqual(await db.collection('fs.chunks').findOne({ files_id: chunks[0].files_id, n: 2 }), chunks[2], 'so does one of ObjectIds');
      assert.deepEqual(await db.collection('fs.chunks').findOne({ _id: chunks[4]._id }), chunks[4]);
      await assert.rejects(eventsOf(client).insertOne({ _id: 'evt_dup', session_id: 'sess_3', sequence_number: 4 }), { code: 11000 });
      await assert.rejects(db.collection('fs.chunks').insertOne({ _id: new ObjectId(), files_id: chunks[0].files_id, n: 5 }), { code: 11000 });
      await assert.rejects(db.collection('fs.chunks').insertOne({ _id: chunks[1]._id, files_id: new ObjectId(), n: 0 }), { code: 11000 }, 'the _id index of ObjectIds');
    };
    await withMongo(async (client) => {
      await check(client, events);
      await eventsOf(client).insertOne(added);
      await eventsOf(client).updateOne({ _id: 'evt_001' }, { $set: { 'payload.done': true } });
    }, dir);
    const after = [...events.map((e) => (e._id === 'evt_001' ? { ...e, payload: { ...e.payload, done: true } } : e)), added];
    await withMongo((client) => check(client, after), dir);
  });
});
