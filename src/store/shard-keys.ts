/**
 * The MongoDB sharding plan, as data: the shard key of every collection
 * Troupe creates, or `null` for a collection that stays unsharded on the
 * database's primary shard (small, or read and written rarely). docs/scaling.md
 * explains each choice; test/unit/shard-keys.test.ts checks that every index
 * in INDEXES stays valid under these keys (a unique index must start with the
 * shard key's fields, or MongoDB refuses it and the fence it stands for would
 * no longer hold across shards).
 *
 * Apply with `sh.shardCollection("<db>.<collection>", key)` on empty
 * collections (see docs/scaling.md for the order); nothing at runtime reads it.
 */
export type ShardKey = Record<string, 1 | 'hashed'>;

export interface ShardPlan {
  key: ShardKey | null;
  /** Why this key: what it keeps targeted and what it leaves scatter-gather. */
  why: string;
}

export const SHARD_KEYS: Record<string, ShardPlan> = {
  sessions: { key: { _id: 'hashed' }, why: 'every turn reads and writes one session by _id; ids are time-ordered ULIDs, so a ranged key would send all new sessions to one shard' },
  events: { key: { session_id: 'hashed' }, why: 'a session’s whole ledger on one shard: the (session_id, sequence_number) unique fence stays enforceable, and append and backfill touch one shard' },
  messages: { key: { session_id: 'hashed' }, why: 'listed per session, saved with the ledger of the same session' },
  idempotency_keys: { key: { _id: 'hashed' }, why: '_id is `scope|key`: the uniqueness fence itself, enforced cluster-wide when _id is the shard key' },
  batch_items: { key: { _id: 'hashed' }, why: 'read and written by _id only' },
  batch_settlements: { key: { _id: 'hashed' }, why: 'settlement tickets are claimed by unique _id insert, which stays a fence only with _id as the shard key' },
  webhook_deliveries: { key: { org_id: 'hashed' }, why: 'the (org_id, event_id) unique fence deduplicates deliveries; the delivery log is listed per org' },
  batches: { key: null, why: 'one document per batch (thousands of sessions each): low volume, read by _id' },
  usage: { key: null, why: 'one document per org, router, model and hour' },
  orgs: { key: null, why: 'tiny' },
  api_keys: { key: null, why: 'small; looked up by hash and cached for 5 s' },
  agents: { key: null, why: 'small; cached by workers' },
  agent_versions: { key: null, why: 'small; immutable and cached by workers' },
  source_snapshots: { key: null, why: 'one per upload' },
  files: { key: null, why: 'metadata only; the bytes live in GridFS buckets' },
  storage_bindings: { key: null, why: 'a few per org' },
  storage_files: { key: null, why: 'an index of files per storage binding, written when a session saves its work area; shard by { org_id: 1, binding_id: 1 } if it grows' },
  credentials: { key: null, why: 'a few per org' },
  webhook_configs: { key: null, why: 'one per agent' },
  routers: { key: null, why: 'a few per org' },
  schedules: { key: null, why: 'a few per agent' },
  schedule_runs: { key: null, why: 'one per tick, at most one a second per schedule' },
};

/** The shard key's field names, in order. */
export function shardKeyFields(key: ShardKey): string[] {
  return Object.keys(key);
}

/**
 * Whether MongoDB accepts (and can enforce) a unique index on a collection
 * sharded by `key`: the index starts with `_id`, or the shard key's field
 * names are a prefix of the index's field names (hashed or not, direction
 * aside). This is the server's own rule, `ShardKeyPattern::isUniqueIndexCompatible`
 * in src/mongo/s/shard_key_pattern.h.
 */
export function uniqueIndexCompatible(key: ShardKey, indexKey: Record<string, unknown>): boolean {
  const fields = Object.keys(indexKey);
  if (fields[0] === '_id') return true;
  const prefix = shardKeyFields(key);
  return prefix.length <= fields.length && prefix.every((f, i) => fields[i] === f);
}

/**
 * A by-`_id` filter, with the shard key's fields added on a sharded cluster
 * (connected through mongos) so the read goes to one shard and an upsert is
 * accepted (sharded MongoDB refuses an upsert whose filter lacks the shard
 * key). Elsewhere it stays `_id` alone: FerretDB v1 pushes only `_id`
 * equality down to SQLite and scans for anything more (measured 66 ms against
 * 938 ms per read on 20,000 events, docs/decisions.md).
 */
export function byId<I extends string | { $in: string[] }, T extends object>(id: I, shardKey: T, sharded: boolean): { _id: I } & Partial<T> {
  return sharded ? { _id: id, ...shardKey } : ({ _id: id } as { _id: I } & Partial<T>);
}
