import { mkdirSync } from 'node:fs';
import { MongoClient } from 'mongodb';
import { buildFerretdb } from './ferretdb.js';
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

/** A local MongoDB-wire server: `mongod` when installed, else the FerretDB wrapper. */
export async function startMongoWire(dataDir: string, log: (msg: string) => void, opts: { port?: number } = {}): Promise<{ url: string; proc: ManagedProcess; kind: string }> {
  mkdirSync(dataDir, { recursive: true });
  // A given port lets a fault test restart the server in place, on the same data.
  const port = opts.port ?? (await freePort());
  const url = `mongodb://127.0.0.1:${port}/`;
  const mongod = onPath('mongod');
  let proc: ManagedProcess;
  let kind: string;
  if (mongod) {
    kind = 'mongod';
    proc = startManaged('mongod', mongod, ['--port', String(port), '--bind_ip', '127.0.0.1', '--dbpath', dataDir, '--quiet']);
  } else {
    kind = 'ferretdb';
    const bin = buildFerretdb(log);
    proc = startManaged('ferretdb', bin, ['-listen', `127.0.0.1:${port}`, '-data', dataDir, '-log-level', 'error']);
  }
  await waitUntil(proc, () => pingMongo(url), 30_000);
  return { url, proc, kind };
}
