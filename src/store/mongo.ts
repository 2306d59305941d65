import { MongoClient, type Db } from 'mongodb';
import { once, type Closeable } from '../lifecycle/shutdown.js';

export interface MongoHandle extends Closeable {
  client: MongoClient;
  db: Db;
  /** Connected to a sharded cluster's mongos: stores then name shard keys in their filters (shard-keys.ts). */
  sharded: boolean;
}

export async function connectMongo(url: string, dbName: string, appName = 'troupe', opts: { monitorCommands?: boolean } = {}): Promise<MongoHandle> {
  const client = new MongoClient(url, {
    appName,
    serverSelectionTimeoutMS: 5000,
    connectTimeoutMS: 5000,
    directConnection: directConnectionFor(url),
    maxPoolSize: 50,
    // Only for the benchmarks' round-trip counts: every command then emits an event.
    monitorCommands: opts.monitorCommands ?? false,
    // Polling, not the streaming hello: after a server restart the streaming monitor was seen stuck on its
    // closed connection, the server left Unknown and the pool paused for good (test/faults/mongo-restart).
    serverMonitoringMode: 'poll',
  });
  await client.connect();
  const handle = once('mongo', () => client.close());
  return { name: handle.name, close: handle.close, client, db: client.db(dbName), sharded: await isMongos(client) };
}

/**
 * FerretDB and a single mongod are not replica sets; never let the driver
 * wait for a topology it will not find. A seed list (several mongos, or
 * replica-set members) or an SRV record is a topology to discover: the driver
 * refuses a direct connection to several hosts.
 */
export function directConnectionFor(url: string): boolean {
  if (url.startsWith('mongodb+srv:') || /[?&]replicaSet=/.test(url)) return false;
  const hosts = url.replace(/^mongodb:\/\//, '').split(/[/?]/)[0].split('@').pop() ?? '';
  return !hosts.includes(',');
}

/**
 * mongos answers `hello` with `msg: "isdbgrid"`; mongod, FerretDB and
 * mongo-java-server do not. mongo-java-server knows only the legacy name.
 */
async function isMongos(client: MongoClient): Promise<boolean> {
  const admin = client.db('admin');
  const hello = await admin.command({ hello: 1 }).catch(() => admin.command({ isMaster: 1 }));
  return hello.msg === 'isdbgrid';
}
