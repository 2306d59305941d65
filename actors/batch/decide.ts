import type { BatchChildSettled } from '../../src/domain/actors/batch.js';
import type { BatchDoc, SettlementDoc } from '../../src/store/batches.js';
import type { Header } from '../../src/app/batches/terminal-step.js';

/**
 * The batch actor's decisions: pure, so unit tests call them directly. The
 * actor's protocol takes atomic writes in turn (record the settlement, take
 * a ticket, claim the terminal), each result the input of the next
 * decision; `actor.ts` and src/app/batches/terminal.ts do the reads and
 * writes in between. The terminal decisions, shared with batch creation,
 * are in src/app/batches/terminal-step.ts.
 */

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
