import assert from 'node:assert/strict';
import { RedisKeys } from '../../infra/redis/keys.js';
import { shardOf } from '../../infra/queues/queues.js';

/** The part of a key Redis Cluster hashes: the first {...} with content. */
function hashTag(key: string): string {
  const open = key.indexOf('{');
  const close = key.indexOf('}', open + 1);
  return open >= 0 && close > open + 1 ? key.slice(open + 1, close) : key;
}

describe('RedisKeys', () => {
  const keys = new RedisKeys('troupe');

  it('puts all keys of one BullMQ queue in one cluster slot', () => {
    const prefix = keys.queuePrefix('session:7');
    // BullMQ builds keys as `${prefix}:${queueName}:${suffix}`.
    const tags = ['wait', 'active', 'meta', 'id', 'events'].map((s) => hashTag(`${prefix}:session:7:${s}`));
    assert.equal(new Set(tags).size, 1);
    assert.notEqual(hashTag(keys.queuePrefix('session:8')), tags[0]);
  });

  it('names session channels after the session', () => {
    assert.equal(keys.sessionEvents('ses_1'), 'troupe:events:ses_1');
  });
});

describe('shardOf', () => {
  it('is stable and spreads ids over the shards', () => {
    assert.equal(shardOf('ses_abc', 64), shardOf('ses_abc', 64));
    const seen = new Set<number>();
    for (let i = 0; i < 2000; i++) seen.add(shardOf(`ses_${i}`, 64));
    assert.equal(seen.size, 64);
  });
});
