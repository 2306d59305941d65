import { batchProgress, deletedChildStatus, itemState, type BatchCounts, type ChildState, type Settled } from '../domain/batch-status.js';
import { NotFoundError } from '../domain/errors.js';
import type { BatchDoc, BatchStore } from './batches.js';
import { itemView, type BatchItem, type BatchItemView } from '../domain/views/batch-item.js';
import type { BatchChild, SessionStore } from './sessions.js';

export interface BatchView {
  batch_id: string;
  status: string;
  counts: BatchCounts;
  /** Left out on request: a progress read needs only status and counts. */
  sessions?: BatchItemView[];
}

/** One item as read now: what a client sees of it, and the state it counts as. */
export interface BatchRow {
  view: BatchItemView;
  state: ChildState;
}

function row(item: BatchItem, child: BatchChild | undefined, settled: Settled | null): BatchRow {
  const state = itemState({ created: item.session_id !== null, session: child ?? null, settled });
  if (!item.session_id) return { view: itemView(item), state };
  // A deleted child: the item as created, marked deleted, with how its message ended (what it counts as).
  if (!child) return { view: { ...itemView(item), status: 'deleted', last_message_status: deletedChildStatus(settled) }, state };
  return { view: { ...itemView(item), status: child.status, last_message_status: child.last_message_status ?? null, version_id: child.version_id, llm_id: child.llm_id, metadata: child.metadata ?? {} }, state };
}

/**
 * Every item of a batch with its child's state now, in input order: the one
 * read that the GET, the batch webhook's counts and the batch actor's
 * terminal decision are all derived from, so they cannot disagree. The
 * children come in one query; settlements are read only for children that
 * are gone, whose session can no longer say how they ended.
 */
export async function readRows(batches: BatchStore, sessions: SessionStore, batch: Pick<BatchDoc, '_id' | 'org_id' | 'chunk_count'>): Promise<BatchRow[]> {
  const [items, children] = await Promise.all([batches.items(batch), sessions.batchChildren(batch.org_id, batch._id)]);
  const byId = new Map(children.map((c) => [c._id, c]));
  const gone = items.flatMap((i) => (i.session_id && !byId.has(i.session_id) ? [i.session_id] : []));
  const settled = new Map((await batches.settlementsOf(gone)).flatMap((s) => (s ? [[s._id, s.status] as const] : [])));
  return items.map((item) => row(item, item.session_id ? byId.get(item.session_id) : undefined, (item.session_id && settled.get(item.session_id)) || null));
}

/**
 * `GET /v1/session-batches/{id}`: the children are the source of truth, so
 * each item's status is read from its session, and the batch status and
 * counts are derived from them (`readRows`). The progress form reads the
 * same and leaves the items out, so its status and counts are the full
 * read's.
 */
export async function readBatch(batches: BatchStore, sessions: SessionStore, orgId: string, id: string, opts: { sessions: boolean } = { sessions: true }): Promise<BatchView> {
  const batch = await batches.get(orgId, id);
  if (!batch || batch.state !== 'ready') throw new NotFoundError('batch', id);
  const rows = await readRows(batches, sessions, batch);
  const progress = { batch_id: batch._id, ...batchProgress(rows.map((r) => r.state)) };
  return opts.sessions ? { ...progress, sessions: rows.map((r) => r.view) } : progress;
}

/**
 * The counts a batch webhook's body carries: those its terminal status was
 * decided from, so the body's status and counts are one decision and match
 * what the GET answered then. A batch fired before they were recorded gets
 * them read now, as the GET does. Null when the batch cannot be read.
 */
export async function terminalCounts(batches: BatchStore, sessions: SessionStore, orgId: string, id: string): Promise<BatchCounts | null> {
  const batch = await batches.get(orgId, id);
  if (!batch || batch.state !== 'ready') return null;
  if (batch.terminal_counts) return batch.terminal_counts;
  return batchProgress((await readRows(batches, sessions, batch)).map((r) => r.state)).counts;
}
