import assert from 'node:assert/strict';
import { clusterUrl, parseRedisTarget } from '../../src/lib/redis/target.js';

describe('parseRedisTarget', () => {
  it('reads one server with credentials and a database', () => {
    assert.deepEqual(parseRedisTarget('rediss://default:p%40ss@cache.example.net:6380/2'), {
      cluster: false,
      tls: true,
      nodes: [{ host: 'cache.example.net', port: 6380 }],
      db: 2,
      username: 'default',
      password: 'p@ss',
    });
  });

  it('reads a cluster URL with several seed nodes, defaulting the port', () => {
    const t = parseRedisTarget('redis-cluster://:secret@10.0.0.1:7000,10.0.0.2,[::1]:7002');
    assert.equal(t.cluster, true);
    assert.equal(t.tls, false);
    assert.equal(t.password, 'secret');
    assert.equal(t.username, undefined);
    assert.deepEqual(t.nodes, [
      { host: '10.0.0.1', port: 7000 },
      { host: '10.0.0.2', port: 6379 },
      { host: '::1', port: 7002 },
    ]);
  });

  it('treats redis:// as a cluster seed when REDIS_CLUSTER is set', () => {
    assert.equal(parseRedisTarget('redis://127.0.0.1:7000', true).cluster, true);
    assert.equal(parseRedisTarget('redis://127.0.0.1:7000', false).cluster, false);
  });

  it('round-trips seed nodes through clusterUrl', () => {
    const nodes = [{ host: '127.0.0.1', port: 7000 }, { host: '127.0.0.1', port: 7001 }];
    assert.deepEqual(parseRedisTarget(clusterUrl(nodes)).nodes, nodes);
  });

  it('refuses what it cannot connect to', () => {
    assert.throws(() => parseRedisTarget('http://x'), /must use redis:\/\//);
    assert.throws(() => parseRedisTarget('redis://'), /names no host/);
    assert.throws(() => parseRedisTarget('redis://a:1,b:2'), /several hosts/);
    assert.throws(() => parseRedisTarget('redis-cluster://a:0'), /bad port/);
  });
});
