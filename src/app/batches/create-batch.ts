import type { Outbox, Send } from '../../domain/actors/address.js';
import { finishIfSettled } from './terminal.js';
import { effectSends } from '../../domain/session/effects.js';
import { messageStart, sessionCommand } from '../../domain/actors/session.js';
import type { SecretBox } from '../../lib/crypto/secret-box.js';
import { batchStatus } from '../../domain/batch-status.js';
import { ConflictError, InvalidRequestError, NotFoundError, UnprocessableError } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import type { AgentStore } from '../../store/agents.js';
import type { BatchDoc, BatchStore } from '../../store/batches.js';
import { itemView, type BatchItem, type BatchItemView } from '../../domain/views/batch-item.js';
import { bodyHash, sameBody } from '../../store/idempotency.js';
import type { Stores } from '../../store/stores.js';
import { createdItem, planItems, rejectedItem, type ItemCheck } from './plan.js';
import { writeFirstTurns } from './write.js';
import { isDuplicateKey } from '../../store/duplicate-key.js';

/** The envelope as validated; items are raw until each is checked on its own. */
export interface CreateBatchBody {
  idempotency_key?: string;
  items: unknown[];
}

export interface CreatedBatch {
  batch_id: string;
  status: string;
  sessions: BatchItemView[];
}

export interface BatchDeps {
  stores: Pick<Stores, 'ledger' | 'messages' | 'sessions'>;
  batches: BatchStore;
  agents: AgentStore;
  box: SecretBox;
  /** Hands the first turns' effects to the session actors, and a terminal webhook to the webhook actor. */
  outbox: Outbox;
  publicUrl: string;
  checkItem: ItemCheck;
  /** The key that creates the batch: its budget counts the sessions' spend, as for a session created alone. */
  apiKeyId?: string;
}

function agentIdOf(item: unknown): string | null {
  const id = item && typeof item === 'object' ? (item as { agent_id?: unknown }).agent_id : undefined;
  return typeof id === 'string' && id.length > 0 ? id : null;
}

/**
 * All items must name one agent; the 400 names the first item that differs.
 * This is part of the envelope: an item without an agent_id fails on its own,
 * but two different agent_ids, or none at all, refuse the batch.
 */
export function checkOneAgent(items: unknown[]): string {
  const first = items.findIndex((i) => agentIdOf(i) !== null);
  if (first < 0) throw new InvalidRequestError('items[0].agent_id is required: a batch names its agent in every item.', 'items[0].agent_id', 'missing_agent_id');
  const agentId = agentIdOf(items[first])!;
  const other = items.findIndex((i) => agentIdOf(i) !== null && agentIdOf(i) !== agentId);
  if (other >= 0) throw new InvalidRequestError(`items[${other}].agent_id must equal items[${first}].agent_id (${agentId}): a batch has one agent.`, `items[${other}].agent_id`, 'mixed_agent_ids');
  return agentId;
}

/**
 * Jobs handed off per Redis round trip. One pipeline of 10,000 job adds ran
 * past the command timeout on a loaded host (a 500 in 3 of 7 runs); slices
 * keep each round trip short, and job ids make a retried slice harmless.
 */
const WAKE_SLICE = 500;

/**
 * Hands off the stored first turns' effects (each a deferred `message.start`,
 * queued behind interactive work), a slice per Redis round trip. `sends` are
 * the decisions' own effects; a replay rebuilds them from the items.
 */
async function wake(deps: BatchDeps, batchId: string, items: BatchItem[], sends?: Send[]): Promise<void> {
  const all = sends ?? items.flatMap((i) => (i.session_id && i.message_id ? [sessionCommand(i.session_id, messageStart(i.message_id), 'batch')] : []));
  for (let i = 0; i < all.length; i += WAKE_SLICE) await deps.outbox.send(all.slice(i, i + WAKE_SLICE));
  await deps.batches.markWoken(batchId);
}

/**
 * The answer to a repeated idempotency_key: the original response, rebuilt
 * from the stored items. A creator that stored the items but died before
 * waking the sessions is finished here (the wake's job ids are deterministic).
 */
async function replay(deps: BatchDeps, existing: BatchDoc, body: CreateBatchBody): Promise<CreatedBatch> {
  if (!sameBody(existing.body_hash, body, deps.box)) throw new UnprocessableError('idempotency_key was already used with a different body.', 'idempotency_key_reused', 'idempotency_key');
  if (existing.state !== 'ready') throw new ConflictError('A batch with this idempotency_key is still being created; retry shortly.', 'idempotency_key_in_flight', 'idempotency_key');
  const items = await deps.batches.items(existing);
  if (!existing.woken) await wake(deps, existing._id, items);
  return { batch_id: existing._id, status: existing.initial_status ?? 'queued', sessions: items.map(itemView) };
}

function header(orgId: string, agentId: string, key: string | null, hash: string, itemCount: number): BatchDoc {
  const id = newId('batch');
  return {
    _id: id, org_id: orgId, agent_id: agentId, idempotency_key: key, key_slot: key ?? id, body_hash: hash, state: 'creating', woken: false,
    created_at: new Date(), item_count: itemCount, chunk_count: 0, created_count: 0, rejected_count: 0, initial_status: null,
    settled: 0, terminal_fired: false, terminal_type: null, terminal_enqueued: false,
  };
}

/** Takes the idempotency key (or, without one, just the batch id); a replay when another request took it first. */
async function claim(deps: BatchDeps, doc: BatchDoc, body: CreateBatchBody): Promise<CreatedBatch | null> {
  const key = doc.idempotency_key;
  try {
    await deps.batches.claim(doc);
    return null;
  } catch (err) {
    // Two first requests raced for the key: the unique index let one in.
    if (key === null || !isDuplicateKey(err)) throw err;
    const winner = await deps.batches.byKey(doc.org_id, key);
    if (!winner) throw err;
    return replay(deps, winner, body);
  }
}

/** Plans and writes; returns the item results in input order, and the stored turns' effects. */
async function build(deps: BatchDeps, doc: BatchDoc, inputs: unknown[]): Promise<{ items: BatchItem[]; sends: Send[] }> {
  const planned = await planItems(deps.agents, deps.box, deps.publicUrl, doc.org_id, { id: doc._id, agentId: doc.agent_id, apiKeyId: deps.apiKeyId }, inputs, deps.checkItem);
  const turns = planned.flatMap((p) => ('turn' in p ? [p.turn] : []));
  const { stored, lost } = await writeFirstTurns(deps.stores, turns);
  const lostIds = new Set(lost.map((t) => t.session._id));
  const items = planned.map((p) => {
    if ('rejected' in p) return p.rejected;
    if (lostIds.has(p.turn.session._id)) return rejectedItem(p.index, inputs[p.index], 'The session could not be stored; retry this item in a new batch.', doc.agent_id);
    return createdItem(p.index, p.turn);
  });
  return { items, sends: stored.flatMap((t) => effectSends(t.session, t.effects)) };
}

/**
 * `POST /v1/session-batches`: one session per item, each with its first user
 * message, written in bulk and woken with one bulk add. Items fail on their
 * own; an unknown agent fails the whole batch (404), as no item could work.
 */
export async function createBatch(deps: BatchDeps, orgId: string, body: CreateBatchBody): Promise<CreatedBatch> {
  const agentId = checkOneAgent(body.items);
  // A retry answers as its first request did, also once the agent is deleted (an Idempotency-Key retry of a
  // message is not refused either): the client must still learn the batch id whose answer it lost.
  const seen = body.idempotency_key === undefined ? null : await deps.batches.byKey(orgId, body.idempotency_key);
  if (seen) return replay(deps, seen, body);
  const agent = await deps.agents.get(orgId, agentId);
  if (!agent || agent.deleted_at) throw new NotFoundError('agent', agentId);
  const doc = header(orgId, agentId, body.idempotency_key ?? null, bodyHash(body, deps.box), body.items.length);
  const replayed = await claim(deps, doc, body);
  if (replayed) return replayed;
  let items: BatchItem[];
  let sends: Send[];
  try {
    ({ items, sends } = await build(deps, doc, body.items));
    const created = items.filter((i) => i.session_id).length;
    const status = batchStatus(items.map((i) => (i.session_id ? 'queued' : 'rejected')));
    const chunks = await deps.batches.saveItems(doc._id, items);
    await deps.batches.markReady(doc._id, { chunk_count: chunks, created_count: created, rejected_count: items.length - created, initial_status: status });
    Object.assign(doc, { state: 'ready', chunk_count: chunks, created_count: created, rejected_count: items.length - created, initial_status: status });
  } catch (err) {
    // Free the key so the client can retry; sessions already written stay unreachable from any batch.
    await deps.batches.release(doc._id).catch(() => undefined);
    throw err;
  }
  await wake(deps, doc._id, items, sends);
  // A batch whose every item failed is terminal now; no child will ever report.
  if (doc.created_count === 0) await finishIfSettled({ batches: deps.batches, sessions: deps.stores.sessions }, deps.outbox, doc);
  return { batch_id: doc._id, status: doc.initial_status!, sessions: items.map(itemView) };
}
