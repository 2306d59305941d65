import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { buildFerretdb } from './ferretdb.js';
import { buildMongoJavaServer, mongoJavaServerArgs } from './mongo-java-server.js';
import { freePort, onPath, startManaged, waitUntil, type ManagedProcess } from './process.js';

async function pingMongo(url: string): Promise<boolean> {
  const client = new MongoClient(url, { directConnection: true, serverSelectionTimeoutMS: 500, connectTimeoutMS: 500 });
  try {
    await client.connect();
    await client.db('admin').command({ ping: 1 });
    return true;
  } finally {
    await client.close().catch(() => undefined);
  }
}

/** The local MongoDB-wire servers the launcher can start. */
export const MONGO_KINDS = ['mongod', 'mongo-java-server', 'ferretdb'] as const;
export type MongoKind = (typeof MONGO_KINDS)[number];

/**
 * Which server to start: `TROUPE_LOCAL_MONGO` when set, else `mongod` when
 * installed, else mongo-java-server (see docs/decisions.md for why).
 */
export function localMongoKind(env: NodeJS.ProcessEnv = process.env): MongoKind {
  const chosen = env.TROUPE_LOCAL_MONGO?.trim();
  if (chosen) {
    if (!(MONGO_KINDS as readonly string[]).includes(chosen)) {
      throw new Error(`TROUPE_LOCAL_MONGO must be one of ${MONGO_KINDS.join(', ')}; got ${JSON.stringify(chosen)}`);
    }
    return chosen as MongoKind;
  }
  return onPath('mongod') ? 'mongod' : 'mongo-java-server';
}

export interface MongoWireOptions {
  kind?: MongoKind;
  /** mongo-java-server only: keep nothing on disk (faster, for throwaway runs). */
  memory?: boolean;
  /** A given port lets a fault test restart the server in place, on the same data. */
  port?: number;
}

/** Starts a local MongoDB-wire server with its data under `dataDir`, on a free loopback port. */
export async function startMongoWire(
  dataDir: string,
  log: (msg: string) => void,
  opts: MongoWireOptions = {},
): Promise<{ url: string; proc: ManagedProcess; kind: MongoKind }> {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const kind = opts.kind ?? localMongoKind();
  const port = opts.port ?? (await freePort());
  const url = `mongodb://127.0.0.1:${port}/`;
  let proc: ManagedProcess;
  if (kind === 'mongod') {
    const mongod = onPath('mongod');
    if (!mongod) throw new Error('TROUPE_LOCAL_MONGO=mongod, but mongod is not on PATH');
    proc = startManaged('mongod', mongod, ['--port', String(port), '--bind_ip', '127.0.0.1', '--dbpath', dataDir, '--quiet']);
  } else if (kind === 'mongo-java-server') {
    const { java, jar } = buildMongoJavaServer(log);
    proc = startManaged('mongo-java-server', java, mongoJavaServerArgs(jar, port, opts.memory ? 'memory' : { file: join(dataDir, 'troupe.mv') }));
  } else {
    const bin = buildFerretdb(log);
    proc = startManaged('ferretdb', bin, ['-listen', `127.0.0.1:${port}`, '-data', dataDir, '-log-level', 'error']);
  }
  await waitUntil(proc, () => pingMongo(url), 30_000);
  return { url, proc, kind };
}
