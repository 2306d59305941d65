import { batchProgress, terminalWebhookType, type BatchCounts, type ChildState, type TerminalWebhookType } from '../../src/domain/batch-status.js';
import type { BatchDoc, SettlementDoc } from '../../src/store/batches.js';
import type { Send } from '../runtime/actor.js';
import { webhookSend, type WebhookJob } from '../webhook/messages.js';
import type { BatchChildSettled } from './messages.js';

/**
 * The batch actor's decisions: pure, so unit tests call them directly. The
 * actor's protocol takes atomic writes in turn (record the settlement, take
 * a ticket, claim the terminal), each result the input of the next
 * decision; `actor.ts` and `terminal.ts` do the reads and writes in between.
 */

/** The header fields the decisions read. */
export type Header = Pick<BatchDoc, '_id' | 'org_id' | 'agent_id' | 'state' | 'chunk_count' | 'terminal_fired' | 'terminal_type' | 'terminal_enqueued'>;
type Counted = Header & Pick<BatchDoc, 'settled' | 'created_count'>;

/** How handling a settled child ended (the integration tests and the log read it). */
export type SettledOutcome = 'unknown_batch' | 'counted' | 'duplicate' | 'fired';

/** A child report for a batch that is not there (or is another org's) is dropped; otherwise its settlement is recorded. */
export function admit(header: Counted | null, job: BatchChildSettled): { kind: 'drop' } | { kind: 'count'; header: Counted; settlement: SettlementDoc; hint: number } {
  if (!header || header.org_id !== job.org_id) return { kind: 'drop' };
  // The settlement row is keyed by session id, so a child counts once whatever later messages it gets.
  return { kind: 'count', header, settlement: { _id: job.session_id, batch_id: job.batch_id, status: job.status, counted: false }, hint: header.settled };
}

/**
 * Whether a report whose settlement row already existed still takes a ticket:
 * yes unless that row was counted, since a crash between the insert and the
 * ticket leaves it uncounted and the retry must count it.
 */
export function needsTicket(existing: Pick<SettlementDoc, 'counted'> | null): boolean {
  return !existing?.counted;
}

/**
 * After counting: the quiet outcome, and whether to check for the terminal
 * webhook. A duplicate still checks once everything looks settled: the first
 * delivery may have died before firing. A ticket only triggers the check (a
 * crash between ticket and mark can count a child twice), at or above the
 * number of children.
 */
export function afterCount(header: Counted, counted: { fresh: boolean; ticket: number | null }): { outcome: 'counted' | 'duplicate'; check: boolean } {
  const outcome = counted.fresh ? 'counted' : 'duplicate';
  if (header.terminal_enqueued) return { outcome, check: false };
  const reached = (counted.ticket ?? header.settled) >= header.created_count;
  return { outcome, check: reached || header.terminal_fired };
}

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
