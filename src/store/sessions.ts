import type { Collection, Db, Filter } from 'mongodb';
import type { SessionState } from '../domain/ledger.js';
import type { SessionDoc } from '../domain/views/session.js';
import { insertEach } from './insert-each.js';

export function sessionState(s: SessionDoc): SessionState {
  return {
    id: s._id,
    status: s.status,
    last_sequence: s.last_sequence,
    last_message_id: s.last_message_id,
    last_message_status: s.last_message_status,
    running_message_id: s.running_message_id,
    queued_message_ids: [...s.queued_message_ids],
    recent_commands: [...(s.recent_commands ?? [])],
  };
}

/** Sessions a metadata-filtered list page looks at, at most (SessionStore.list). */
export const METADATA_WALK = 1000;

const BATCH_CHILD_FIELDS = { status: 1, last_message_status: 1, agent_id: 1, version_id: 1, llm_id: 1, metadata: 1 } as const;

/** What a batch read needs of each child session. */
export type BatchChild = Pick<SessionDoc, '_id' | 'status' | 'last_message_status' | 'agent_id' | 'version_id' | 'llm_id' | 'metadata'>;

export class SessionStore {
  readonly col: Collection<SessionDoc>;

  constructor(db: Db) {
    this.col = db.collection<SessionDoc>('sessions');
  }

  /** Sessions of an org with status running, counted up to `upTo` (enough to compare with a cap). */
  countRunning(orgId: string, upTo: number): Promise<number> {
    return this.col.countDocuments({ org_id: orgId, status: 'running' }, { limit: upTo });
  }

  async insert(doc: SessionDoc): Promise<void> {
    await this.col.insertOne(doc);
  }

  /** Inserts new sessions (batch creation), unordered; the indexes of those that failed. */
  insertEach(docs: SessionDoc[]): Promise<Set<number>> {
    return insertEach(this.col, docs);
  }

  async get(orgId: string, id: string): Promise<SessionDoc | null> {
    const s = await this.col.findOne({ _id: id });
    return s && s.org_id === orgId ? s : null;
  }

  /** Unscoped read for actors, which act on ids that were already authorised. */
  byId(id: string): Promise<SessionDoc | null> {
    return this.col.findOne({ _id: id });
  }

  /**
   * A page of the org's sessions, newest first, after the cursor `after`. With
   * metadata filters the store matches each session it walks on fetch (no index
   * serves client-chosen keys on every server: docs/decisions.md), so the walk
   * is bounded: it looks at METADATA_WALK sessions at most, and when that window
   * ends before the page is full, `walkedTo` (the window's last id) is where the
   * next page starts, though the page holds fewer rows, even none.
   */
  async list(orgId: string, metadata: Record<string, string>, limit: number, after: string | null): Promise<{ rows: SessionDoc[]; walkedTo: string | null }> {
    const ids: { $lt?: string; $gte?: string } = after ? { $lt: after } : {};
    const filters = Object.entries(metadata);
    let walkedTo: string | null = null;
    if (filters.length) {
      // The window's last id, read from the index alone (a covered query).
      const [edge] = await this.col.find(after ? { org_id: orgId, _id: { $lt: after } } : { org_id: orgId }, { projection: { _id: 1 } }).sort({ _id: -1 }).skip(METADATA_WALK - 1).limit(1).toArray();
      if (edge) ids.$gte = walkedTo = edge._id;
    }
    const filter: Filter<SessionDoc> = { org_id: orgId };
    if (ids.$lt || ids.$gte) filter._id = ids;
    for (const [k, v] of filters) (filter as Record<string, unknown>)[`metadata.${k}`] = v;
    const rows = await this.col.find(filter).sort({ _id: -1 }).limit(limit + 1).toArray();
    return { rows, walkedTo: rows.length > limit ? null : walkedTo };
  }

  /** Idle sessions created before `cutoff`, in id order from `after` (retention candidates). */
  idleCreatedBefore(orgId: string, cutoff: Date, limit: number, after: string | null = null): Promise<SessionDoc[]> {
    const filter: Filter<SessionDoc> = { org_id: orgId, status: 'idle', created_at: { $lt: cutoff } };
    if (after) filter._id = { $gt: after };
    return this.col.find(filter).sort({ _id: 1 }).limit(limit).toArray();
  }

  /**
   * A batch's children, the fields its status is derived from: one query on the
   * `batch` index. Reading each child by `_id` instead took 2,000 queries for
   * 2,000 children, and FerretDB v1 scans its table for each (bench/lists).
   */
  batchChildren(orgId: string, batchId: string): Promise<BatchChild[]> {
    return this.col.find({ org_id: orgId, batch_id: batchId }, { projection: BATCH_CHILD_FIELDS }).toArray() as Promise<BatchChild[]>;
  }

  /** Ids of up to `limit` sessions that mount the storage binding. */
  async usingStorage(orgId: string, bindingId: string, limit: number): Promise<string[]> {
    const rows = await this.col.find({ org_id: orgId, storage_binding_id: bindingId }, { projection: { _id: 1 } }).limit(limit).toArray();
    return rows.map((r) => r._id);
  }

  /** Removes the session record only; `src/app/sessions/delete-session.ts` removes the rest. */
  async remove(orgId: string, id: string): Promise<boolean> {
    const r = await this.col.deleteOne({ _id: id, org_id: orgId });
    return r.deletedCount === 1;
  }

  /**
   * Writes the projected state. Only the session's own actor writes it, one
   * turn at a time, after winning the ledger's sequence fence, so no stale
   * write can follow a newer one. The filter is `_id` alone: it is the only
   * one FerretDB v1 narrows in SQLite instead of decoding every document.
   */
  /** Sessions whose read model says `running`, in id order from `after`; the stranded-work sweeper pages through them. */
  running(limit: number, after: string | null): Promise<SessionDoc[]> {
    const filter: Filter<SessionDoc> = after ? { status: 'running', _id: { $gt: after } } : { status: 'running' };
    // Without the sealed fields and metadata: the sweeper needs the state only.
    return this.col.find(filter, { projection: { secrets: 0, llm_api_key: 0, metadata: 0 } }).sort({ _id: 1 }).limit(limit).toArray();
  }

  /**
   * Stamps every session of a soft-deleted agent with its `deleted_at`, so a
   * turn reads the refusal from the session it loads anyway. A repeated
   * DELETE stamps again with the same time (and reaches any session missed).
   */
  async markAgentDeleted(orgId: string, agentId: string, deletedAt: Date): Promise<void> {
    await this.col.updateMany({ org_id: orgId, agent_id: agentId }, { $set: { agent_deleted_at: deletedAt } });
  }

  async saveState(state: SessionState): Promise<void> {
    const { id, ...rest } = state;
    await this.col.updateOne({ _id: id }, { $set: rest });
  }
}
