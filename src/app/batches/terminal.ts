import type { BatchCounts } from '../../domain/batch-status.js';
import { readRows } from '../../store/batch-view.js';
import type { BatchStore } from '../../store/batches.js';
import type { SessionStore } from '../../store/sessions.js';
import type { Outbox } from '../../domain/actors/address.js';
import { afterLostClaim, terminalOf, terminalStep, terminalWebhook, type Header } from './terminal-step.js';

/** The stores a batch's children are read from. */
export interface BatchReads {
  batches: BatchStore;
  sessions: SessionStore;
}

/**
 * Enqueues the batch's terminal webhook. The right to decide is taken by a
 * unique insert (atomic on FerretDB v1 and MongoDB alike), so one caller
 * decides the type; what a caller that lost the claim does is `afterLostClaim`.
 */
async function fireTerminal(store: BatchStore, outbox: Outbox, header: Header, type: string, counts: BatchCounts | null): Promise<boolean> {
  const claimed = await store.claimTerminal(header._id, type, counts);
  const decided = claimed ? type : afterLostClaim(await store.header(header._id), type);
  if (!decided) return false;
  await outbox.send([terminalWebhook(header, decided)]);
  await store.markEnqueued(header._id);
  return claimed;
}

/**
 * Fires the terminal webhook when every item is terminal, as the GET reads
 * them (the decisions are `terminalStep` and `terminalOf`); true when this
 * caller fired it. Batch creation calls it too, for a batch none of whose
 * items became a session.
 */
export async function finishIfSettled(reads: BatchReads, outbox: Outbox, header: Header): Promise<boolean> {
  const step = terminalStep(header);
  if (step.kind === 'fire') return fireTerminal(reads.batches, outbox, header, step.type, null);
  if (step.kind === 'none') return false;
  const rows = await readRows(reads.batches, reads.sessions, header);
  const terminal = terminalOf(rows.map((r) => r.state));
  return terminal ? fireTerminal(reads.batches, outbox, header, terminal.type, terminal.counts) : false;
}
