import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { ConfigError, loadConfig, parseMasterKeys } from '../../src/lib/config/config.js';

const base = { MONGODB_URL: 'mongodb://127.0.0.1:27017/troupe', REDIS_URL: 'redis://127.0.0.1:6379' };

describe('config', () => {
  it('applies defaults', () => {
    const c = loadConfig(base);
    assert.equal(c.port, 8080);
    assert.equal(c.routerPort, 8081);
    assert.equal(c.mongodbDb, 'troupe');
    assert.equal(c.publicUrl, 'http://localhost:8080');
    assert.equal(c.webhooksAllowPrivate, false);
    assert.ok(Object.isFrozen(c));
  });

  for (const [name, value, pattern] of [
    ['PORT', 'eighty', /PORT must be an integer/],
    ['PORT', '70000', /PORT must be between/],
    ['MONGODB_URL', 'postgres://x', /MONGODB_URL must use mongodb/],
    ['REDIS_URL', 'not a url', /REDIS_URL must use redis:\/\//],
    ['REDIS_URL', 'redis://a:1,b:2', /REDIS_URL lists several hosts; use redis-cluster:\/\//],
    ['REDIS_URL', 'redis-cluster://a:1/2', /a Redis Cluster has only database 0/],
    ['REDIS_URL', 'redis-cluster://a:99999', /REDIS_URL bad port/],
    ['REDIS_CLUSTER', 'maybe', /REDIS_CLUSTER must be 1 or 0/],
    ['LOG_LEVEL', 'loud', /LOG_LEVEL must be one of/],
    ['TROUPE_WEBHOOKS_ALLOW_PRIVATE', 'maybe', /TROUPE_WEBHOOKS_ALLOW_PRIVATE must be 1 or 0/],
    ['TROUPE_MASTER_KEY', 'short', /must be 32 bytes/],
    ['TROUPE_BOOTSTRAP_API_KEY', 'x', /16-200 characters/],
    ['TROUPE_MAX_FILE_BYTES', '-1', /must be an integer/],
    ['METRICS_TOKEN', 'short', /METRICS_TOKEN must be at least 16 characters/],
    ['METRICS_PUBLIC', 'maybe', /METRICS_PUBLIC must be 1 or 0/],
  ] as const) {
    it(`rejects ${name}=${value} with one clear line`, () => {
      assert.throws(
        () => loadConfig({ ...base, [name]: value }),
        (e: unknown) => e instanceof ConfigError && pattern.test(e.message) && !e.message.includes('\n'),
      );
    });
  }

  it('serves /metrics on the public ports outside production, and in production only with a token or METRICS_PUBLIC=1', () => {
    const prod = { ...base, NODE_ENV: 'production', TROUPE_MASTER_KEY: randomBytes(32).toString('base64') };
    assert.deepEqual(loadConfig(base).metricsAccess, { token: null, onPublicPorts: true });
    assert.deepEqual(loadConfig(prod).metricsAccess, { token: null, onPublicPorts: false });
    assert.deepEqual(loadConfig({ ...prod, METRICS_PUBLIC: '1' }).metricsAccess, { token: null, onPublicPorts: true });
    assert.deepEqual(loadConfig({ ...prod, METRICS_TOKEN: 'a'.repeat(16) }).metricsAccess, { token: 'a'.repeat(16), onPublicPorts: true });
  });

  it('binds loopback by default, all interfaces in production, and takes HOST / ROUTER_HOST', () => {
    const key = randomBytes(32).toString('base64');
    assert.equal(loadConfig(base).host, '127.0.0.1');
    assert.equal(loadConfig(base).routerHost, '127.0.0.1');
    const prod = loadConfig({ ...base, NODE_ENV: 'production', TROUPE_MASTER_KEY: key });
    assert.equal(prod.host, null);
    assert.equal(prod.routerHost, null);
    const split = loadConfig({ ...base, HOST: '*', ROUTER_HOST: '[::1]' });
    assert.equal(split.host, null);
    assert.equal(split.routerHost, '::1');
    assert.equal(loadConfig({ ...base, HOST: '10.0.0.5' }).routerHost, '10.0.0.5');
    assert.throws(() => loadConfig({ ...base, HOST: 'a b' }), /HOST must be an IP address or host name/);
  });

  it('requires MONGODB_URL and REDIS_URL', () => {
    assert.throws(() => loadConfig({ REDIS_URL: base.REDIS_URL }), /MONGODB_URL is required/);
    assert.throws(() => loadConfig({ MONGODB_URL: base.MONGODB_URL }), /REDIS_URL is required/);
  });

  it('tells a Redis Cluster from one server', () => {
    assert.equal(loadConfig(base).redisCluster, false);
    assert.equal(loadConfig({ ...base, REDIS_URL: 'redis-cluster://10.0.0.1:7000,10.0.0.2:7000' }).redisCluster, true);
    assert.equal(loadConfig({ ...base, REDIS_CLUSTER: '1' }).redisCluster, true);
  });

  it('refuses the private-network escape hatches in production unless TROUPE_I_UNDERSTAND_PRIVATE_NETWORKS=1, and names those on', () => {
    const prod = { ...base, NODE_ENV: 'production', TROUPE_MASTER_KEY: randomBytes(32).toString('base64') };
    for (const hatch of ['TROUPE_WEBHOOKS_ALLOW_PRIVATE', 'TROUPE_MODELS_ALLOW_PRIVATE', 'TROUPE_EGRESS_ALLOW_PRIVATE']) {
      assert.throws(
        () => loadConfig({ ...prod, [hatch]: '1' }),
        (e: unknown) => e instanceof ConfigError && e.message.includes(hatch) && /TROUPE_I_UNDERSTAND_PRIVATE_NETWORKS=1/.test(e.message) && !e.message.includes('\n'),
        hatch,
      );
      assert.throws(() => loadConfig({ ...prod, [hatch]: 'true', TROUPE_I_UNDERSTAND_PRIVATE_NETWORKS: '0' }), ConfigError, `${hatch}: 0 is not consent`);
    }
    const both = { ...prod, TROUPE_WEBHOOKS_ALLOW_PRIVATE: '1', TROUPE_MODELS_ALLOW_PRIVATE: 'yes' };
    const c = loadConfig({ ...both, TROUPE_I_UNDERSTAND_PRIVATE_NETWORKS: '1' });
    assert.equal(c.webhooksAllowPrivate, true);
    assert.deepEqual(c.privateNetworkHatches, ['TROUPE_MODELS_ALLOW_PRIVATE', 'TROUPE_WEBHOOKS_ALLOW_PRIVATE']);
    assert.deepEqual(loadConfig({ ...prod, TROUPE_WEBHOOKS_ALLOW_PRIVATE: '0' }).privateNetworkHatches, [], 'off is fine');
    // Outside production nothing more is asked (npm start and the tests use them on loopback).
    assert.deepEqual(loadConfig({ ...base, TROUPE_WEBHOOKS_ALLOW_PRIVATE: '1' }).privateNetworkHatches, ['TROUPE_WEBHOOKS_ALLOW_PRIVATE']);
  });

  it('requires a master key in production', () => {
    assert.throws(() => loadConfig({ ...base, NODE_ENV: 'production' }), /TROUPE_MASTER_KEY is required/);
  });

  it('parses several master keys, the first encrypting', () => {
    const a = randomBytes(32).toString('base64');
    const b = randomBytes(32).toString('base64');
    const { keys, currentId } = parseMasterKeys(`k2:${a},k1:${b}`);
    assert.equal(currentId, 'k2');
    assert.deepEqual([...keys.keys()], ['k2', 'k1']);
    assert.throws(() => parseMasterKeys(`k1:${a},k1:${b}`), /repeats key id k1/);
  });
});
