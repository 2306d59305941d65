import assert from 'node:assert/strict';
import { Cluster } from 'ioredis';
import { createRedis, type RedisClient } from '../../src/lib/redis/connection.js';
import { shardSubscribers } from '../../src/lib/redis/shard-subscribers.js';
import { parseRedisTarget } from '../../src/lib/redis/target.js';
import { PubSubHub } from '../../src/lib/pubsub/hub.js';
import { TcpProxy } from '../support/tcp-proxy.js';

async function until(ms: number, fn: () => boolean): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

/**
 * The hub's subscriber through a loopback proxy to the suite's real Redis:
 * a partition whose close Redis sends is lost in it leaves a half-open
 * socket that only a PING can find out. (One redis-server; the Redis
 * Cluster leg runs the suite below.)
 */
describe('PubSubHub: a silent subscriber', function () {
  let proxy: TcpProxy;
  let sub: RedisClient;
  let pub: RedisClient;
  let hub: PubSubHub;
  const silent: number[] = [];

  before(async function () {
    const url = process.env.REDIS_URL ?? '';
    if (parseRedisTarget(url, process.env.REDIS_CLUSTER === '1').cluster) return this.skip();
    const u = new URL(url);
    proxy = new TcpProxy(Number(u.port));
    await proxy.start();
    u.port = String(proxy.port);
    sub = createRedis(u.toString(), 'subscriber', 'hub-test');
    pub = createRedis(url, 'command', 'hub-test-pub');
    hub = new PubSubHub(sub, { probeEveryMs: 100, probeTimeoutMs: 400, onSilent: (ms) => silent.push(ms) });
  });
  after(async () => {
    await hub?.close();
    sub?.disconnect();
    pub?.disconnect();
    await proxy?.close();
  });

  it('is replaced when it stops answering, and says when it is subscribed again so that missed messages can be read elsewhere', async () => {
    const got: string[] = [];
    let resubscribed = 0;
    await hub.subscribe('hub-test:ch', (m) => got.push(m));
    hub.onResubscribed(() => resubscribed++);
    await pub.publish('hub-test:ch', 'before');
    assert.ok(await until(2000, () => got.includes('before')));

    proxy.blackhole();
    proxy.sever(); // Redis forgets the subscriber; the hub is not told.
    await pub.publish('hub-test:ch', 'lost');
    assert.ok(await until(3000, () => silent.length > 0), 'the unanswered PING replaced the connection');
    assert.equal(resubscribed, 0, 'not subscribed again while partitioned');
    proxy.heal();
    assert.ok(await until(5000, () => resubscribed === 1), 'told once the subscription is confirmed again');
    // From the moment it is told, nothing published is missed.
    await pub.publish('hub-test:ch', 'after');
    assert.ok(await until(2000, () => got.includes('after')));
    assert.deepEqual(got, ['before', 'after'], 'what was published meanwhile is gone: the reason the listeners are told');
  });

  it('answers a readiness check while the subscriber answers, and not while it is silent or gone', async () => {
    await hub.check();
    proxy.blackhole();
    const silentCheck = await Promise.race([hub.check().then(() => 'answered', () => 'refused'), new Promise((r) => setTimeout(() => r('waiting'), 300))]);
    assert.equal(silentCheck, 'waiting', 'a silent subscriber leaves the check waiting: /readyz bounds it and answers 503');
    assert.ok(await until(3000, () => sub.status !== 'ready'), 'the unanswered PING replaced the connection');
    await assert.rejects(hub.check(), /subscriber connection is/, 'a replaced one is refused at once');
    proxy.heal();
    assert.ok(await until(5000, () => sub.status === 'ready'));
    await hub.check();
  });

  it('does not replace a connection that answers', async () => {
    const before = silent.length;
    await new Promise((r) => setTimeout(r, 600));
    assert.equal(silent.length, before);
  });
});

/**
 * The same on a Redis Cluster, where ioredis keeps one shard subscriber per master: the hub's cluster client
 * reaches each master through a loopback proxy of its own (ioredis's natMap maps the addresses the cluster
 * announces), and the master that owns the test's channel is partitioned. ioredis replaces a shard subscriber
 * whose connection ends, but only the hub's PINGs find out that one went silent.
 */
describe('PubSubHub on a Redis Cluster: a silent shard subscriber', function () {
  this.timeout(60_000);
  const proxies = new Map<number, TcpProxy>();
  let sub: Cluster;
  let pub: RedisClient;
  let hub: PubSubHub;
  let owner: TcpProxy;
  const channel = 'hub-test:{silent-shard}';
  const silent: number[] = [];

  before(async function () {
    const url = process.env.REDIS_URL ?? '';
    const target = parseRedisTarget(url, process.env.REDIS_CLUSTER === '1');
    if (!target.cluster) return this.skip();
    pub = createRedis(url, 'command', 'hub-test-pub');
    const slot = Number(await (pub as Cluster).cluster('KEYSLOT', channel));
    // Every master, as the cluster announces it (the URL may list a few seeds only).
    const masters = (pub as Cluster).nodes('master').map((n) => ({ host: n.options.host!, port: n.options.port! }));
    assert.ok(masters.length > 1, `a cluster of masters: ${JSON.stringify(masters)}`);
    const natMap: Record<string, { host: string; port: number }> = {};
    for (const m of masters) {
      const proxy = new TcpProxy(m.port);
      await proxy.start();
      proxies.set(m.port, proxy);
      natMap[`${m.host}:${m.port}`] = { host: '127.0.0.1', port: proxy.port };
    }
    // The subscriber role's options (src/lib/redis/connection.ts), plus the map to the proxies.
    sub = new Cluster(
      masters.map((m) => natMap[`${m.host}:${m.port}`]),
      { shardedSubscribers: true, natMap, enableReadyCheck: true, clusterRetryStrategy: (n) => Math.min(n * 100, 2000), redisOptions: { connectionName: 'troupe:hub-test', maxRetriesPerRequest: null, connectTimeout: 2000 } },
    );
    sub.on('error', () => undefined);
    hub = new PubSubHub(sub, { probeEveryMs: 100, probeTimeoutMs: 400, onSilent: (ms) => silent.push(ms) });
    owner = proxies.get(Number((pub as Cluster).slots[slot][0].split(':')[1]))!;
    assert.ok(owner, `a proxy for the master of slot ${slot}`);
  });
  after(async () => {
    await hub?.close();
    sub?.disconnect();
    pub?.disconnect();
    for (const p of proxies.values()) await p.close();
  });

  it('is replaced when it stops answering, and says when it is subscribed again so that missed messages can be read elsewhere', async () => {
    const got: string[] = [];
    let resubscribed = 0;
    let disconnected = 0;
    await hub.subscribe(channel, (m) => got.push(m));
    hub.onResubscribed(() => resubscribed++);
    hub.onDisconnect(() => disconnected++);
    await pub.spublish(channel, 'before');
    assert.ok(await until(2000, () => got.includes('before')));
    assert.ok(shardSubscribers(sub).some((s) => s.connection.status === 'ready'), 'a shard subscriber to watch');

    owner.blackhole();
    owner.sever(); // The master forgets the subscriber; the hub is not told.
    await pub.spublish(channel, 'lost');
    assert.ok(await until(3000, () => silent.length > 0), 'the unanswered PING ended the shard subscriber');
    assert.ok(await until(3000, () => disconnected > 0), 'waiters are told the subscription was interrupted');
    assert.equal(resubscribed, 0, 'not subscribed again while partitioned');
    owner.heal();
    assert.ok(await until(20_000, () => resubscribed >= 1), 'told once ioredis has a new shard subscriber and its subscription is confirmed');
    // From the moment it is told, nothing published is missed.
    await pub.spublish(channel, 'after');
    assert.ok(await until(2000, () => got.includes('after')));
    assert.deepEqual(got, ['before', 'after'], 'what was published meanwhile is gone: the reason the listeners are told');
  });

  it('answers a readiness check while every shard subscriber answers, and not while one is silent or gone', async () => {
    await hub.check();
    const base = silent.length;
    owner.blackhole();
    // Cut off, the check never answers: it waits on a silent connection (/readyz bounds the wait and answers 503),
    // or is refused at once while the one ended is not replaced. (The proxy accepts a new connection and holds it,
    // so a replacement looks connected, and silent, until the heal.)
    const outcomes: string[] = [];
    for (let i = 0; i < 5; i++) {
      const check = hub.check();
      outcomes.push(await Promise.race([check.then(() => 'answered', () => 'refused'), new Promise<string>((r) => setTimeout(() => r('waiting'), 300))]));
      check.catch(() => undefined);
    }
    assert.ok(!outcomes.includes('answered'), outcomes.join(', '));
    assert.ok(await until(3000, () => silent.length > base), 'the unanswered PING ended it');
    owner.heal();
    let answered = false;
    for (const deadline = Date.now() + 20_000; !answered && Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
      answered = await hub.check().then(() => true, () => false);
    }
    assert.ok(answered, 'answers again once replaced');
  });

  it('does not replace connections that answer', async () => {
    const before = silent.length;
    await new Promise((r) => setTimeout(r, 600));
    assert.equal(silent.length, before);
  });
});
