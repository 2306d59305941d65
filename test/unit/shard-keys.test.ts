import assert from 'node:assert/strict';
import { INDEXES } from '../../src/store/indexes.js';
import { byId, SHARD_KEYS, uniqueIndexCompatible } from '../../src/store/shard-keys.js';

describe('MongoDB shard keys (docs/scaling.md)', () => {
  it('follows the server’s rule for unique indexes on sharded collections', () => {
    // The examples documented with ShardKeyPattern::isUniqueIndexCompatible in mongodb/mongo.
    assert.equal(uniqueIndexCompatible({ a: 1 }, { a: 1, b: 1 }), true);
    assert.equal(uniqueIndexCompatible({ a: 1 }, { a: -1, b: 1 }), true);
    assert.equal(uniqueIndexCompatible({ a: 'hashed' }, { a: 1 }), true);
    assert.equal(uniqueIndexCompatible({ a: 1 }, { b: 1 }), false);
    assert.equal(uniqueIndexCompatible({ a: 'hashed', b: 1 }, { b: 1 }), false);
    assert.equal(uniqueIndexCompatible({ a: 1, b: 1 }, { a: 1 }), false);
    assert.equal(uniqueIndexCompatible({ a: 1 }, { _id: 1, b: 1 }), true);
  });

  it('decides, for every collection Troupe creates, whether and how it is sharded', () => {
    assert.deepEqual(Object.keys(SHARD_KEYS).sort(), Object.keys(INDEXES).sort(), 'add the new collection to src/store/shard-keys.ts and docs/scaling.md');
  });

  for (const [collection, plan] of Object.entries(SHARD_KEYS)) {
    if (!plan.key) continue;
    const key = plan.key;
    it(`keeps every unique index of ${collection} enforceable under ${JSON.stringify(key)}`, () => {
      assert.ok(Object.values(key).filter((v) => v === 'hashed').length <= 1, 'a shard key has at most one hashed field');
      for (const index of INDEXES[collection]) {
        if (!index.unique) continue;
        assert.ok(uniqueIndexCompatible(key, index.key as Record<string, unknown>), `${collection}.${index.name} ${JSON.stringify(index.key)} must start with the shard key's fields`);
        assert.ok(!Object.values(index.key).includes('hashed'), `${collection}.${index.name}: a hashed index cannot be unique`);
      }
    });
  }

  it('shards the collections a turn writes, so the hot path scales with shards', () => {
    for (const c of ['sessions', 'events', 'messages', 'idempotency_keys']) assert.ok(SHARD_KEYS[c].key, `${c} is sharded`);
  });

  it('names the shard key in by-id filters only on a sharded cluster (FerretDB v1 scans for anything beyond _id)', () => {
    assert.deepEqual(byId('ses_1:3', { session_id: 'ses_1' }, true), { _id: 'ses_1:3', session_id: 'ses_1' });
    assert.deepEqual(byId('ses_1:3', { session_id: 'ses_1' }, false), { _id: 'ses_1:3' });
  });
});
