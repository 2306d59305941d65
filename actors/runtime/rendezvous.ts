import { createHash } from 'node:crypto';

/** A member's weight for a shard: 48 bits of SHA-1 over both, the same in every process. */
function weight(member: string, shard: number): number {
  return createHash('sha1').update(`${member}\u0000${shard}`).digest().readUIntBE(0, 6);
}

/**
 * Rendezvous (highest random weight) hashing: each shard goes to the member
 * that weighs most for it. Every process computes the same answer from the
 * same member list, with no coordination, and a member joining or leaving
 * moves only the shards it wins or held (about 1/N of them), so the others
 * keep their sessions' caches warm.
 */
export function shardOwners(members: readonly string[], shards: number): string[] {
  const sorted = [...new Set(members)].sort();
  if (!sorted.length) throw new Error('shards need at least one member');
  return Array.from({ length: shards }, (_, shard) => {
    let best = sorted[0];
    let bestWeight = weight(best, shard);
    for (const m of sorted.slice(1)) {
      const w = weight(m, shard);
      // Ties (vanishingly rare at 48 bits) go to the first in sorted order, so every process agrees.
      if (w > bestWeight) [best, bestWeight] = [m, w];
    }
    return best;
  });
}

/** The shards `self` owns among `members` (itself counted even if the list lacks it: it is alive). */
export function ownedShards(self: string, members: readonly string[], shards: number): Set<number> {
  const owners = shardOwners([...members, self], shards);
  return new Set(owners.flatMap((m, shard) => (m === self ? [shard] : [])));
}
