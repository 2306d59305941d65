import { batchProgress, terminalWebhookType, type BatchCounts, type ChildState, type TerminalWebhookType } from '../../domain/batch-status.js';
import type { Send } from '../../domain/actors/address.js';
import { webhookSend, type WebhookJob } from '../../domain/actors/webhook.js';
import type { BatchDoc } from '../../store/batches.js';

/**
 * The decisions of a batch's terminal webhook: pure, so unit tests call them
 * directly. The batch actor (a child settled) and batch creation (no item
 * became a session) both reach them through `finishIfSettled` (terminal.ts).
 */

/** The header fields the decisions read. */
export type Header = Pick<BatchDoc, '_id' | 'org_id' | 'agent_id' | 'state' | 'chunk_count' | 'terminal_fired' | 'terminal_type' | 'terminal_enqueued'>;
/** The terminal check on a fresh header: nothing, fire a type already decided, or read the children to decide. */
export function terminalStep(header: Header): { kind: 'none' } | { kind: 'fire'; type: string } | { kind: 'read_children' } {
  if (header.terminal_enqueued) return { kind: 'none' };
  if (header.terminal_fired && header.terminal_type) return { kind: 'fire', type: header.terminal_type };
  // Until the items are stored there is nothing to check against.
  return header.state === 'ready' ? { kind: 'read_children' } : { kind: 'none' };
}

/**
 * The terminal webhook's type, and the counts it was decided from, once
 * every item is terminal; else null. The counters only trigger this; the
 * states are read from the children themselves (`readRows` in
 * src/store/batch-view.ts, the read the GET answers from), so a counter that
 * ran ahead after a crash cannot fire early, and the webhook names the status
 * and counts a GET answers.
 */
export function terminalOf(states: readonly ChildState[]): { type: TerminalWebhookType; counts: BatchCounts } | null {
  if (!states.length) return null;
  const { status, counts } = batchProgress(states);
  const type = terminalWebhookType(status);
  return type ? { type, counts } : null;
}

/**
 * After a claim lost to another caller: that caller may have died before
 * enqueueing, so enqueue too (the deterministic job id makes it one job),
 * with the type it decided; unless it is enqueued already or the batch is gone.
 */
export function afterLostClaim(current: Pick<BatchDoc, 'terminal_type' | 'terminal_enqueued'> | null, type: string): string | null {
  if (!current || current.terminal_enqueued) return null;
  return current.terminal_type ?? type;
}

/** The batch's terminal webhook delivery. */
export function terminalWebhook(header: Pick<BatchDoc, '_id' | 'org_id' | 'agent_id'>, type: string): Send {
  const job: WebhookJob = { kind: 'batch.lifecycle', org_id: header.org_id, agent_id: header.agent_id, batch_id: header._id, type: type as Extract<WebhookJob, { kind: 'batch.lifecycle' }>['type'] };
  return webhookSend(job);
}
