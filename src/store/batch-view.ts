import { batchStatus, childState, countChildren, type BatchCounts, type ChildState } from '../domain/batch-status.js';
import { NotFoundError } from '../domain/errors.js';
import { itemView, type BatchItem, type BatchItemView, type BatchStore } from './batches.js';
import type { BatchChild, SessionStore } from './sessions.js';

export interface BatchView {
  batch_id: string;
  status: string;
  counts: BatchCounts;
  sessions: BatchItemView[];
}

function current(item: BatchItem, child: BatchChild | undefined): { view: BatchItemView; state: ChildState } {
  if (!item.session_id) return { view: itemView(item), state: 'rejected' };
  // A child that vanished keeps what the batch recorded at creation.
  if (!child) return { view: itemView(item), state: childState(item.last_message_status) };
  const view = { ...itemView(item), status: child.status, last_message_status: child.last_message_status ?? null, version_id: child.version_id, llm_id: child.llm_id, metadata: child.metadata ?? {} };
  return { view, state: childState(view.last_message_status) };
}

/**
 * `GET /v1/session-batches/{id}`: the children are the source of truth, so
 * each item's status is read from its session (all of them in one query), and
 * the batch status and counts are derived from them.
 */
export async function readBatch(batches: BatchStore, sessions: SessionStore, orgId: string, id: string): Promise<BatchView> {
  const batch = await batches.get(orgId, id);
  if (!batch || batch.state !== 'ready') throw new NotFoundError('batch', id);
  const [items, children] = await Promise.all([batches.items(batch), sessions.batchChildren(orgId, batch._id)]);
  const byId = new Map(children.map((c) => [c._id, c]));
  const rows = items.map((item) => current(item, item.session_id ? byId.get(item.session_id) : undefined));
  const states = rows.map((r) => r.state);
  return { batch_id: batch._id, status: batchStatus(states), counts: countChildren(states), sessions: rows.map((r) => r.view) };
}
