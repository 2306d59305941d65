import type { Db, IndexDescription } from 'mongodb';

/**
 * Every index Troupe needs, by collection. Only plain, unique and compound
 * indexes: they are what both MongoDB and FerretDB support (no TTL indexes;
 * expiry is done by a periodic reaper instead).
 */
export const INDEXES: Record<string, IndexDescription[]> = {
  orgs: [{ key: { name: 1 }, name: 'name_unique', unique: true }],
  api_keys: [
    { key: { hash: 1 }, name: 'hash_unique', unique: true },
    { key: { org_id: 1, prefix: 1 }, name: 'org_prefix' },
  ],
  agents: [
    { key: { org_id: 1, _id: 1 }, name: 'org_id' },
    { key: { org_id: 1, deleted_at: 1, _id: 1 }, name: 'org_live' },
  ],
  agent_versions: [
    { key: { org_id: 1, agent_id: 1, _id: 1 }, name: 'org_agent' },
    { key: { agent_id: 1, number: 1 }, name: 'agent_number_unique', unique: true },
  ],
  source_snapshots: [
    { key: { org_id: 1, _id: 1 }, name: 'org_id' },
    // The reaper's expired reservations.
    { key: { status: 1, expires_at: 1 }, name: 'status_expires' },
  ],
  sessions: [
    { key: { org_id: 1, _id: 1 }, name: 'org_id' },
    { key: { batch_id: 1 }, name: 'batch' },
    // Counts an org's running sessions (the running-session cap) and pages its idle ones by id (the retention reaper).
    { key: { org_id: 1, status: 1, _id: 1 }, name: 'org_status_id' },
    { key: { org_id: 1, storage_binding_id: 1 }, name: 'org_storage_binding' },
    // A soft-deleted agent's sessions are stamped (SessionStore.markAgentDeleted).
    { key: { org_id: 1, agent_id: 1 }, name: 'org_agent' },
    // The stranded-work sweeper lists running sessions every few seconds.
    { key: { status: 1, _id: 1 }, name: 'status' },
  ],
  events: [
    { key: { session_id: 1, sequence_number: 1 }, name: 'session_sequence_unique', unique: true },
    { key: { session_id: 1, command_id: 1 }, name: 'session_command' },
  ],
  messages: [{ key: { session_id: 1, sequence_number: 1 }, name: 'session_sequence' }],
  // `_id` is `scope|key`, so the _id index is the uniqueness fence (and, as the
  // shard key, stays one across shards; a (scope, key) unique index could not).
  idempotency_keys: [
    { key: { created_at: 1 }, name: 'created_at' },
    // A deleted session's `session:<id>` scope is removed with it.
    { key: { scope: 1 }, name: 'scope' },
  ],
  // key_slot is the idempotency_key, or the batch id when there is none (never null, so unique holds).
  batches: [{ key: { org_id: 1, key_slot: 1 }, name: 'org_key_slot_unique', unique: true }],
  batch_items: [],
  batch_settlements: [],
  files: [{ key: { org_id: 1, _id: 1 }, name: 'org_id' }],
  storage_bindings: [
    { key: { org_id: 1, _id: 1 }, name: 'org_id' },
    { key: { org_id: 1, name: 1 }, name: 'org_name_unique', unique: true },
  ],
  storage_files: [{ key: { org_id: 1, binding_id: 1, path: 1 }, name: 'org_binding_path' }],
  credentials: [{ key: { org_id: 1, name: 1 }, name: 'org_name_unique', unique: true }],
  webhook_configs: [{ key: { org_id: 1, agent_id: 1 }, name: 'org_agent_unique', unique: true }],
  webhook_deliveries: [
    { key: { org_id: 1, event_id: 1 }, name: 'org_event_unique', unique: true },
    { key: { org_id: 1, agent_id: 1, _id: -1 }, name: 'org_agent_recent' },
    // The reaper's finished deliveries past retention (pending ones have none).
    { key: { completed_at: 1 }, name: 'completed_at' },
  ],
  routers: [{ key: { org_id: 1, router_id: 1 }, name: 'org_router_unique', unique: true }],
  schedules: [{ key: { org_id: 1, agent_id: 1, _id: 1 }, name: 'org_agent' }],
  // A run's _id is the tick's (schedule id and time), so the _id index keeps a tick to one record.
  // With the reaper's two scans across orgs: runs past retention, and runs left pending.
  schedule_runs: [
    { key: { org_id: 1, schedule_id: 1, scheduled_for: -1 }, name: 'org_schedule_recent' },
    { key: { scheduled_for: 1 }, name: 'scheduled_for' },
    { key: { status: 1, scheduled_for: 1 }, name: 'status_scheduled_for' },
  ],
  usage: [
    { key: { org_id: 1, router_id: 1, hour: 1 }, name: 'org_router_hour' },
    // GET /v1/usage (an org's hours) and GET /v1/sessions/{id}/usage (one session's records).
    { key: { org_id: 1, hour: 1 }, name: 'org_hour' },
    { key: { org_id: 1, session_id: 1, hour: 1 }, name: 'org_session_hour' },
  ],
};

/**
 * Indexes an earlier release created that a wider one above replaced; dropped
 * at start so they cost no writes. Code still running the earlier release
 * never names an index, so it keeps working while they go.
 */
export const REPLACED_INDEXES: Record<string, string[]> = {
  sessions: ['org_status'],
};

/**
 * Creates missing collections and indexes; safe to run at every start, from
 * any number of processes. Indexes are created one at a time and only when
 * missing: FerretDB v1 drops the connection when a multi-index createIndexes
 * names indexes that already exist.
 */
export async function ensureIndexes(db: Db): Promise<void> {
  const existing = new Set((await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name));
  for (const [collection, indexes] of Object.entries(INDEXES)) {
    if (!existing.has(collection)) {
      try {
        await db.createCollection(collection);
      } catch (err) {
        // Another process created it first.
        if ((err as { codeName?: string }).codeName !== 'NamespaceExists') throw err;
      }
    }
    const have = new Set((await db.collection(collection).listIndexes().toArray()).map((i) => i.name as string));
    for (const index of indexes) {
      if (!have.has(index.name!)) await db.collection(collection).createIndexes([index]);
    }
    for (const name of REPLACED_INDEXES[collection] ?? []) {
      if (have.has(name)) await dropReplaced(db, collection, name);
    }
  }
}

async function dropReplaced(db: Db, collection: string, name: string): Promise<void> {
  try {
    await db.collection(collection).dropIndex(name);
  } catch (err) {
    // Another process dropped it first.
    if ((err as { codeName?: string }).codeName !== 'IndexNotFound') throw err;
  }
}
