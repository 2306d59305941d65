import type { BatchStore } from '../../src/store/batches.js';
import type { Send } from '../runtime/actor.js';
import { afterLostClaim, terminalStep, terminalType, terminalWebhook, type Header } from './decide.js';

/** Where the terminal webhook goes, handed off at once: it must be enqueued before it is marked so. */
export interface Outbox {
  send(sends: Send[]): Promise<void>;
}

/**
 * Enqueues the batch's terminal webhook. The right to decide is taken by a
 * unique insert (atomic on FerretDB v1 and MongoDB alike), so one caller
 * decides the type; what a caller that lost the claim does is `afterLostClaim`.
 */
async function fireTerminal(store: BatchStore, outbox: Outbox, header: Header, type: string): Promise<boolean> {
  const claimed = await store.claimTerminal(header._id, type);
  const decided = claimed ? type : afterLostClaim(await store.header(header._id), type);
  if (!decided) return false;
  await outbox.send([terminalWebhook(header, decided)]);
  await store.markEnqueued(header._id);
  return claimed;
}

/**
 * Fires the terminal webhook when every child has settled (the decisions are
 * `terminalStep` and `terminalType`); true when this caller fired it. Batch
 * creation calls it too, for a batch none of whose items became a session.
 */
export async function finishIfSettled(store: BatchStore, outbox: Outbox, header: Header): Promise<boolean> {
  const step = terminalStep(header);
  if (step.kind === 'fire') return fireTerminal(store, outbox, header, step.type);
  if (step.kind === 'none') return false;
  const items = await store.items(header);
  if (!items.length) return false;
  const settlements = await store.settlementsOf(items.flatMap((i) => (i.session_id ? [i.session_id] : [])));
  const type = terminalType(items, settlements);
  return type ? fireTerminal(store, outbox, header, type) : false;
}
