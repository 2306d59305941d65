import assert from 'node:assert/strict';
import { createRedis, type RedisClient } from '../../infra/redis/connection.js';
import { parseRedisTarget } from '../../infra/redis/target.js';
import { PubSubHub } from '../../src/pubsub/hub.js';
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
 * socket that only a PING can find out. (One redis-server: on a Redis
 * Cluster ioredis runs the shard subscribers and the hub does not probe.)
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

  it('does not replace a connection that answers', async () => {
    const before = silent.length;
    await new Promise((r) => setTimeout(r, 600));
    assert.equal(silent.length, before);
  });
});
