import assert from 'node:assert/strict';
import type { Db } from 'mongodb';
import { shardOf } from '../../../src/lib/queues/queues.js';
import { lastAssignment } from '../../support/shard-assignment.js';
import { TcpProxy } from '../../support/tcp-proxy.js';
import { Cluster } from './cluster.js';
import { Load, scriptedAgent } from './load.js';

/** Polls `fn` every 100 ms until it returns something truthy; null once `ms` passed. Returns how long it took. */
export async function within<T>(ms: number, fn: () => T | null | undefined | false | Promise<T | null | undefined | false>): Promise<{ value: T; ms: number } | null> {
  const start = Date.now();
  for (;;) {
    const value = await fn();
    if (value) return { value, ms: Date.now() - start };
    if (Date.now() - start > ms) return null;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A proxy in front of the server at `url` (redis:// or mongodb://, on loopback), and the same URL pointed at the proxy. */
export async function proxyFor(url: string): Promise<{ proxy: TcpProxy; url: string }> {
  const u = new URL(url);
  const proxy = new TcpProxy(Number(u.port));
  await proxy.start();
  u.port = String(proxy.port);
  return { proxy, url: u.toString() };
}

/** Enough shards that two workers each get some (4 would leave one with none in 1 of 8 starts). */
export const PARTITION_SHARDS = 16;

/**
 * The partition tests' deploy: a web process and two workers, `cut`, which
 * reaches the server of `via` through a proxy the test can blackhole, and
 * `direct`, which reaches everything.
 */
export async function startSplit(via: 'REDIS_URL' | 'MONGODB_URL'): Promise<{ c: Cluster; proxy: TcpProxy; agentId: string }> {
  const c = await Cluster.start({ env: { TROUPE_SESSION_SHARDS: String(PARTITION_SHARDS) } });
  const p = await proxyFor(via === 'MONGODB_URL' ? c.mongoUrl : c.env.REDIS_URL);
  await c.start('web-1', 'web');
  await c.start('cut', 'worker', { [via]: p.url });
  await c.start('direct', 'worker');
  return { c, proxy: p.proxy, agentId: await scriptedAgent(await c.db()) };
}

/**
 * Once both workers see each other: sessions started, their traffic under way,
 * and the ones on `cut`'s shards with turns recorded, so a blackhole now catches
 * turns mid-way (some recorded, most not).
 */
export async function trafficUnderWay(c: Cluster, agentId: string, sessionCount: number, messages: number): Promise<{ load: Load; sessions: string[]; onCut: string[]; traffic: Promise<unknown>; db: Db }> {
  const cut = c.procs.get('cut')!;
  const direct = c.procs.get('direct')!;
  assert.ok(await within(10_000, () => lastAssignment(cut)?.members === 2 && lastAssignment(direct)?.members === 2), 'both workers saw each other');
  const cutShards = new Set(lastAssignment(cut)!.shards);
  assert.ok(cutShards.size > 0 && cutShards.size < PARTITION_SHARDS, `cut owns ${cutShards.size} of ${PARTITION_SHARDS} shards`);

  const load = new Load({ webUrls: () => c.webUrls(), apiKey: c.apiKey });
  const sessions = await Promise.all(Array.from({ length: sessionCount }, () => load.session(agentId)));
  const onCut = sessions.filter((s) => cutShards.has(shardOf(s, PARTITION_SHARDS)));
  assert.ok(onCut.length > 0, 'some sessions live on the shards of the worker to be cut');
  const traffic = Promise.all(sessions.map((s) => load.messages(s, messages)));
  const db = await c.db();
  await within(10_000, async () => (await db.collection('events').countDocuments({ session_id: { $in: onCut } })) >= onCut.length);
  return { load, sessions, onCut, traffic, db };
}
