import assert from 'node:assert/strict';
import { ownedShards, shardOwners } from '../../actors/runtime/rendezvous.js';

describe('rendezvous shard assignment', () => {
  const members = (n: number) => Array.from({ length: n }, (_, i) => `host-${i}:${1000 + i}:ab${i}`);

  it('gives every shard to exactly one member, the same whatever order the list comes in', () => {
    const m = members(3);
    const owners = shardOwners(m, 64);
    assert.equal(owners.length, 64);
    assert.deepEqual(shardOwners([...m].reverse(), 64), owners);
    const sets = m.map((self) => ownedShards(self, m, 64));
    // Disjoint and covering: each shard is in exactly one member's set.
    for (let s = 0; s < 64; s++) assert.equal(sets.filter((set) => set.has(s)).length, 1, `shard ${s}`);
    // Spread: with 3 members none has fewer than 10 or more than 35 of 64.
    for (const set of sets) assert.ok(set.size >= 10 && set.size <= 35, `sizes ${sets.map((x) => x.size).join('/')}`);
  });

  it('gives a member alone every shard, even if the list it saw lacks it', () => {
    assert.equal(ownedShards('solo', [], 16).size, 16);
    assert.equal(ownedShards('solo', ['solo'], 16).size, 16);
  });

  it('moves only the shards of the member that joins or leaves', () => {
    const before = shardOwners(members(4), 256);
    const after = shardOwners(members(5), 256);
    const joined = members(5)[4];
    for (let s = 0; s < 256; s++) if (after[s] !== before[s]) assert.equal(after[s], joined, `shard ${s} moved between old members`);
    const moved = after.filter((m) => m === joined).length;
    // About 1/5 of the shards: between 1/10 and 3/10 here.
    assert.ok(moved >= 26 && moved <= 77, `${moved} of 256 moved`);
    // And back: when it leaves, exactly its shards return to their previous owners.
    assert.deepEqual(shardOwners(members(4), 256), before);
  });
});
