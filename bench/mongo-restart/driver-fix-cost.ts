/**
 * What Troupe's MongoDB driver fix (src/store/driver-fix.ts) costs per command, two ways:
 * - the wrapper alone: CPU per call of the driver's `Connection.writeCommand` with the write itself replaced by
 *   nothing, on a connection object with a plain socket stand-in, with and without the fix;
 * - end to end: this process's CPU per point read against one mongo-java-server (memory backend), with and
 *   without the fix, in alternating rounds.
 *
 *   node dist/bench/mongo-restart/driver-fix-cost.js [rounds=6] [commands=20000] [concurrency=16]
 *
 * Only CPU is counted (process.cpuUsage), so the server and the machine's load matter less than for wall time.
 */
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { startMongoWire } from '../../infra/services/mongo-wire.js';
import { installDriverFix, uninstallDriverFix } from '../../src/store/driver-fix.js';

type Proto = { writeCommand: (this: unknown) => Promise<void> };

/** CPU per call of writeCommand alone (the write replaced by nothing), with and without the fix. */
async function wrapperAlone(calls: number): Promise<Record<'with' | 'without', number>> {
  const { Connection } = require('mongodb/lib/cmap/connection') as { Connection: { prototype: Proto } };
  const real = Connection.prototype.writeCommand;
  const socket = Object.assign(new EventEmitter(), { destroyed: false });
  const conn = Object.assign(Object.create(Connection.prototype) as Proto, { socket, id: 1, address: '127.0.0.1:1' });
  const perCall = async () => {
    const before = process.cpuUsage();
    for (let i = 0; i < calls; i++) await conn.writeCommand();
    const used = process.cpuUsage(before);
    return (used.user + used.system) / calls;
  };
  const us: Record<'with' | 'without', number[]> = { with: [], without: [] };
  try {
    for (let i = 0; i < 6; i++) {
      uninstallDriverFix();
      Connection.prototype.writeCommand = async () => undefined;
      us.without.push(await perCall());
      installDriverFix();
      us.with.push(await perCall());
    }
  } finally {
    uninstallDriverFix();
    Connection.prototype.writeCommand = real;
  }
  return { with: median(us.with), without: median(us.without) };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function round(client: MongoClient, commands: number, concurrency: number): Promise<number> {
  const col = client.db('bench').collection<{ _id: string }>('docs');
  const before = process.cpuUsage();
  let left = commands;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (left-- > 0) await col.findOne({ _id: 'one' });
    }),
  );
  const used = process.cpuUsage(before);
  return (used.user + used.system) / commands;
}

async function main(): Promise<void> {
  const [rounds, commands, concurrency] = [Number(process.argv[2] ?? 6), Number(process.argv[3] ?? 20_000), Number(process.argv[4] ?? 16)];
  const alone = await wrapperAlone(200_000);
  console.log(`the wrapper alone: ${alone.without.toFixed(2)} µs per call without the fix, ${alone.with.toFixed(2)} µs with it`);
  const dir = mkdtempSync(join(tmpdir(), 'troupe-fixcost-'));
  const server = await startMongoWire(dir, () => undefined, { kind: 'mongo-java-server', memory: true });
  const client = new MongoClient(server.url, { directConnection: true, maxPoolSize: 50 });
  try {
    await client.connect();
    await client.db('bench').collection<{ _id: string }>('docs').insertOne({ _id: 'one' });
    await round(client, commands, concurrency); // warm-up
    const us: Record<'with' | 'without', number[]> = { with: [], without: [] };
    for (let i = 0; i < rounds; i++) {
      for (const mode of i % 2 === 0 ? (['with', 'without'] as const) : (['without', 'with'] as const)) {
        if (mode === 'with') installDriverFix();
        else uninstallDriverFix();
        us[mode].push(await round(client, commands, concurrency));
      }
    }
    for (const mode of ['without', 'with'] as const) {
      console.log(`${mode} the fix: client CPU per command, median ${median(us[mode]).toFixed(1)} µs (rounds: ${us[mode].map((u) => u.toFixed(1)).join(', ')})`);
    }
    console.log(`end to end, with minus without: ${(median(us.with) - median(us.without)).toFixed(1)} µs per command (${commands} commands per round, concurrency ${concurrency})`);
  } finally {
    await client.close();
    await server.proc.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
