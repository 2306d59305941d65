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
  agents: [{ key: { org_id: 1, _id: 1 }, name: 'org_id' }],
  agent_versions: [{ key: { org_id: 1, agent_id: 1, _id: 1 }, name: 'org_agent' }],
  source_snapshots: [{ key: { org_id: 1, _id: 1 }, name: 'org_id' }],
  sessions: [{ key: { org_id: 1, _id: 1 }, name: 'org_id' }],
  events: [{ key: { session_id: 1, sequence_number: 1 }, name: 'session_sequence_unique', unique: true }],
  messages: [{ key: { session_id: 1, sequence_number: 1 }, name: 'session_sequence' }],
  idempotency_keys: [{ key: { scope: 1, key: 1 }, name: 'scope_key_unique', unique: true }],
  batches: [{ key: { org_id: 1, idempotency_key: 1 }, name: 'org_idempotency' }],
  files: [{ key: { org_id: 1, _id: 1 }, name: 'org_id' }],
  credentials: [{ key: { org_id: 1, name: 1 }, name: 'org_name_unique', unique: true }],
  webhook_configs: [{ key: { org_id: 1, agent_id: 1 }, name: 'org_agent_unique', unique: true }],
  routers: [{ key: { org_id: 1, router_id: 1 }, name: 'org_router_unique', unique: true }],
};

/** Creates missing collections and indexes; safe to run at every start, from any number of processes. */
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
    await db.collection(collection).createIndexes(indexes);
  }
}
