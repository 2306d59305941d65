/**
 * The MongoDB driver alone under write load while its server restarts (issue 16): no Troupe code.
 *
 *   node dist/bench/mongo-restart/driver-only.js [rounds=10] [signal=SIGTERM] [kind=mongo-java-server]
 *
 * Each round opens a client with Troupe's options, runs WRITERS concurrent writers (batched inserts large
 * enough to fill a socket's buffer, plus point reads), stops the server with the signal, keeps it down 1 s,
 * starts it again on the same port and data, and then waits up to 30 s for every writer to succeed again.
 * It prints, per round: time to the first and last writer's recovery, operations that never settled (hung,
 * detected by a 15 s client-side guard), and, for a round that did not recover, the driver's own state
 * (server description, pool state, monitor state and whether the monitor's connection is closed).
 *
 * `TROUPE_DIAG=1` also counts commands written to a socket that was already destroyed while the driver's
 * connection still thought it open: the write that never settles (see docs/reliability.md).
 * `TROUPE_DRIVER_FIX=1` installs Troupe's fix for it (src/store/driver-fix.ts) first.
 *
 * The race needs a FIN and a write to that socket in one event-loop turn; in a quiet loop like this one it is
 * rare (0 in 4 rounds here), under a loaded machine with many processes it is not (see the fault suite).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { startMongoWire, type MongoKind } from '../../infra/services/mongo-wire.js';
import { freePort, type ManagedProcess } from '../../infra/services/process.js';
import { installDriverFix } from '../../src/store/driver-fix.js';

const WRITERS = 24;
const HANG_MS = 15_000;
const RECOVER_MS = 30_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Counts writes to destroyed sockets by wrapping the driver's internal writeCommand (diagnostics only). */
function countDestroyedWrites(): () => number {
  let n = 0;
  if (process.env.TROUPE_DIAG !== '1') return () => -1;
  const { Connection } = require('mongodb/lib/cmap/connection') as { Connection: { prototype: Record<string, unknown> } };
  const orig = Connection.prototype.writeCommand as (this: { socket: { destroyed: boolean }; closed: boolean }, ...a: unknown[]) => Promise<void>;
  Connection.prototype.writeCommand = async function (this: { socket: { destroyed: boolean }; closed: boolean }, ...a: unknown[]) {
    const p = orig.apply(this, a);
    if (this.socket.destroyed && !this.closed) n++;
    return p;
  };
  return () => n;
}

interface Driver {
  topology?: { s: { servers: Map<string, { description: { type: string; error?: { message: string } }; pool: { poolState: string }; monitor?: { s: { state: string }; connection: { closed: boolean } | null } }> } };
}

function driverState(client: MongoClient): string {
  const servers = (client as unknown as Driver).topology?.s.servers;
  if (!servers) return 'no topology';
  return [...servers.values()]
    .map((s) => `server ${s.description.type} (${s.description.error?.message ?? 'no error'}), pool ${s.pool.poolState}, monitor ${s.monitor?.s.state} on a connection ${s.monitor?.connection ? (s.monitor.connection.closed ? 'closed' : 'open') : 'none'}`)
    .join('; ');
}

function guard<T>(p: Promise<T>): Promise<T | 'hung'> {
  let t: NodeJS.Timeout;
  return Promise.race([p, new Promise<'hung'>((r) => (t = setTimeout(() => r('hung'), HANG_MS)))]).finally(() => clearTimeout(t));
}

async function round(url: string, restart: () => Promise<number>): Promise<{ firstMs: number; lastMs: number; hung: number; stuck: number; state: string }> {
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 5000, connectTimeoutMS: 5000, directConnection: true, maxPoolSize: 50, serverMonitoringMode: 'poll' });
  await client.connect();
  const col = client.db('repro').collection<{ w: number; i: number; pad: string }>('docs');
  const pad = 'x'.repeat(4096);
  let stop = false;
  let back = 0;
  let hung = 0;
  const recovered: number[] = [];
  const writer = async (w: number) => {
    let lastOk = 0;
    for (let i = 0; !stop; i++) {
      const op = i % 2 === 0 ? col.insertMany(Array.from({ length: 32 }, (_, j) => ({ w, i: i * 100 + j, pad }))) : col.findOne({ w, i: (i - 1) * 100 });
      const r = await guard(op.then(() => 'ok' as const, () => 'err' as const));
      if (r === 'hung') hung++;
      if (r === 'ok') lastOk = Date.now();
      if (r === 'ok' && back && lastOk > back && recovered[w] === undefined) recovered[w] = lastOk - back;
      if (r !== 'ok') await sleep(100);
    }
  };
  const running = Array.from({ length: WRITERS }, (_, w) => writer(w));
  await sleep(1500);
  back = await restart();
  const deadline = Date.now() + RECOVER_MS;
  while (Date.now() < deadline && recovered.filter((x) => x !== undefined).length < WRITERS) await sleep(100);
  const state = driverState(client);
  stop = true;
  await Promise.race([Promise.all(running), sleep(HANG_MS + 1000)]);
  await client.close(true).catch(() => undefined);
  const times = recovered.filter((x) => x !== undefined);
  return { firstMs: Math.min(...times), lastMs: Math.max(...times), hung, stuck: WRITERS - times.length, state };
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 10);
  const signal = (process.argv[3] ?? 'SIGTERM') as NodeJS.Signals;
  const kind = (process.argv[4] ?? 'mongo-java-server') as MongoKind;
  const destroyedWrites = countDestroyedWrites();
  if (process.env.TROUPE_DRIVER_FIX === '1' && !installDriverFix()) throw new Error('the driver fix could not be installed');
  const dir = mkdtempSync(join(tmpdir(), 'troupe-mongo-repro-'));
  const port = await freePort();
  let server: ManagedProcess = (await startMongoWire(dir, () => undefined, { port, kind })).proc;
  const url = `mongodb://127.0.0.1:${port}/`;
  const restart = async () => {
    const exited = new Promise((r) => server.child.once('exit', r));
    server.child.kill(signal);
    await exited;
    await server.stop();
    await sleep(1000);
    server = (await startMongoWire(dir, () => undefined, { port, kind })).proc;
    return Date.now();
  };
  let failed = 0;
  try {
    for (let r = 1; r <= rounds; r++) {
      const before = destroyedWrites();
      const res = await round(url, restart);
      const bad = res.stuck > 0;
      if (bad) failed++;
      const diag = before >= 0 ? `, writes to destroyed sockets ${destroyedWrites() - before}` : '';
      console.log(`round ${r}: ${bad ? 'STUCK' : 'recovered'} first ${res.firstMs} ms, last ${res.lastMs} ms, writers stuck ${res.stuck}/${WRITERS}, operations hung ${res.hung}${diag}${bad ? `\n  ${res.state}` : ''}`);
    }
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`${rounds} rounds (${signal}, ${kind}): ${failed} did not recover`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
