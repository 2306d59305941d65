import { batchStatus, childState, countChildren, type BatchCounts, type ChildState } from '../domain/batch-status.js';
import { NotFoundError } from '../domain/errors.js';
import { itemView, type BatchItem, type BatchItemView, type BatchStore } from './batches.js';
import type { SessionDoc, SessionStore } from './sessions.js';

export interface BatchView {
  batch_id: string;
  status: string;
  counts: BatchCounts;
  sessions: BatchItemView[];
}

/** Reads at a time: enough to keep the pool busy without queueing thousands of operations in the driver. */
const READ_CONCURRENCY = 64;

const CHILD_FIELDS = { projection: { status: 1, last_message_status: 1, agent_id: 1, version_id: 1, llm_id: 1, metadata: 1 } } as const;

async function mapLimit<T, R>(list: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(list.length);
  let next = 0;
  const lane = async () => {
    while (next < list.length) {
      const i = next++;
      out[i] = await fn(list[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, list.length) }, lane));
  return out;
}

function current(item: BatchItem, child: Partial<SessionDoc> | null): { view: BatchItemView; state: ChildState } {
  if (!item.session_id) return { view: itemView(item), state: 'rejected' };
  // A child that vanished keeps what the batch recorded at creation.
  if (!child) return { view: itemView(item), state: childState(item.last_message_status) };
  const view = { ...itemView(item), status: child.status!, last_message_status: child.last_message_status ?? null, version_id: child.version_id!, llm_id: child.llm_id!, metadata: child.metadata ?? {} };
  return { view, state: childState(view.last_message_status) };
}

/**
 * `GET /v1/session-batches/{id}`: the children are the source of truth, so
 * each item's status is read from its session, by `_id` (FerretDB v1 scans
 * for anything else), and the batch status and counts are derived from them.
 */
export async function readBatch(batches: BatchStore, sessions: SessionStore, orgId: string, id: string): Promise<BatchView> {
  const batch = await batches.get(orgId, id);
  if (!batch || batch.state !== 'ready') throw new NotFoundError('batch', id);
  const items = await batches.items(batch);
  const children = await mapLimit(items, READ_CONCURRENCY, (i) => (i.session_id ? sessions.col.findOne({ _id: i.session_id }, CHILD_FIELDS) : Promise.resolve(null)));
  const rows = items.map((item, i) => current(item, children[i] as Partial<SessionDoc> | null));
  const states = rows.map((r) => r.state);
  return { batch_id: batch._id, status: batchStatus(states), counts: countChildren(states), sessions: rows.map((r) => r.view) };
}
