import assert from 'node:assert/strict';
import { RedisKeys } from '../../src/lib/redis/keys.js';
import { shardOf } from '../../src/lib/queues/queues.js';
import { masterOf, slotOf } from '../support/slots.js';

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

  it('computes cluster slots like Redis does', () => {
    // Reference values from the Redis Cluster specification and CLUSTER KEYSLOT.
    assert.equal(slotOf('123456789'), 12739);
    assert.equal(slotOf('foo'), 12182);
    assert.equal(slotOf('{user1000}.following'), slotOf('{user1000}.followers'));
  });

  it('spreads the session shard queues over the masters of a 3-master cluster', () => {
    const perMaster = [0, 0, 0];
    for (let i = 0; i < 64; i++) perMaster[masterOf(slotOf(`${keys.queuePrefix(`session-${i}`)}:session-${i}:wait`), 3)]++;
    // 64 queues over 3 masters: none holds fewer than a quarter or more than half.
    for (const n of perMaster) assert.ok(n >= 16 && n <= 32, `per-master queue counts ${perMaster.join('/')}`);
  });

  it('spreads single keys (stickiness, channels, rate-limit counters) over many slots', () => {
    for (const make of [
      (i: number) => keys.routingConversation('org_1', 'rtr_1', `conv_${i}`),
      (i: number) => keys.sessionEvents(`ses_${i}`),
      (i: number) => keys.sessionDeltas(`ses_${i}`),
      (i: number) => `${keys.rateLimit('api-org')}:org_${i}`,
    ]) {
      const slots = new Set(Array.from({ length: 200 }, (_, i) => slotOf(make(i))));
      assert.ok(slots.size > 190, `${slots.size} distinct slots for 200 keys of ${make(0)}`);
    }
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
