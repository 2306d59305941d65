import type { BatchStore } from '../../src/store/batches.js';
import type { BatchChildSettled } from './messages.js';
import { finishIfSettled, type Outbox } from './terminal.js';

/** What counting a child needs: the batch store, and where the terminal webhook goes. */
export interface BatchActorDeps {
  batches: BatchStore;
  outbox: Outbox;
}

export type SettledOutcome = 'unknown_batch' | 'counted' | 'duplicate' | 'fired';

/**
 * Counts a child once. The settlement row (keyed by session id, so a child
 * counts once whatever later messages it gets) is written first, then a
 * ticket is taken; a settlement left uncounted by a crash is counted by the
 * retry. A crash between ticket and mark can count a child twice, so the
 * ticket only triggers the terminal check, which verifies every child's
 * settlement itself, and triggers at or above the number of children.
 */
async function count(deps: BatchActorDeps, job: BatchChildSettled, hint: number): Promise<{ fresh: boolean; ticket: number | null }> {
  const fresh = await deps.batches.recordSettlement({ _id: job.session_id, batch_id: job.batch_id, status: job.status, counted: false });
  if (!fresh) {
    const s = await deps.batches.settlement(job.session_id);
    if (s?.counted) return { fresh: false, ticket: null };
  }
  const ticket = await deps.batches.takeTicket(job.batch_id, hint);
  await deps.batches.markCounted(job.session_id);
  return { fresh, ticket };
}

/** `BatchChildSettled`: count the child; when every created child has settled, fire the terminal webhook once. */
export async function onChildSettled(deps: BatchActorDeps, job: BatchChildSettled): Promise<SettledOutcome> {
  const header = await deps.batches.header(job.batch_id);
  if (!header || header.org_id !== job.org_id) return 'unknown_batch';
  const { fresh, ticket } = await count(deps, job, header.settled);
  const quiet = fresh ? 'counted' : 'duplicate';
  if (header.terminal_enqueued) return quiet;
  // A duplicate still checks once everything looks settled: the first delivery may have died before firing.
  const reached = (ticket ?? header.settled) >= header.created_count;
  if (!reached && !header.terminal_fired) return quiet;
  const latest = (await deps.batches.header(job.batch_id)) ?? header;
  return (await finishIfSettled(deps.batches, deps.outbox, latest)) ? 'fired' : quiet;
}
