import type { BatchStore } from '../../src/store/batches.js';
import type { SessionStore } from '../../src/store/sessions.js';
import { defineActor, DONE } from '../runtime/actor.js';
import { admit, afterCount, needsTicket, type SettledOutcome } from './decide.js';
import { BATCH, type BatchChildSettled } from '../../src/domain/actors/batch.js';
import { finishIfSettled, type BatchReads } from '../../src/app/batches/terminal.js';
import type { Outbox } from '../../src/domain/actors/address.js';

export interface BatchPorts {
  batches: BatchStore;
  sessions: SessionStore;
  log: { warn(obj: object, msg: string): void };
}

/** What counting a child needs: the stores its batch is read from, and where the terminal webhook goes. */
export interface BatchActorDeps extends BatchReads {
  outbox: Outbox;
}

/**
 * `BatchChildSettled`: count the child once; when every created child has
 * settled and every item reads terminal, fire the terminal webhook once. The settlement row is written
 * first, then a ticket is taken; a settlement left uncounted by a crash is
 * counted by the retry. Each step's decision is in `decide.ts`.
 */
export async function onChildSettled(deps: BatchActorDeps, job: BatchChildSettled): Promise<SettledOutcome> {
  const admitted = admit(await deps.batches.header(job.batch_id), job);
  if (admitted.kind === 'drop') return 'unknown_batch';
  const { header } = admitted;
  const fresh = await deps.batches.recordSettlement(admitted.settlement);
  let ticket: number | null = null;
  if (fresh || needsTicket(await deps.batches.settlement(job.session_id))) {
    ticket = await deps.batches.takeTicket(job.batch_id, admitted.hint);
    await deps.batches.markCounted(job.session_id);
  }
  const next = afterCount(header, { fresh, ticket });
  if (!next.check) return next.outcome;
  const latest = (await deps.batches.header(job.batch_id)) ?? header;
  return (await finishIfSettled(deps, deps.outbox, latest)) ? 'fired' : next.outcome;
}

/**
 * The batch actor: counts settled children and fires each batch's terminal
 * webhook once. Its handler is idempotent and its writes atomic, so it is
 * unkeyed: messages run concurrently, across any number of processes.
 */
export const batchActor = defineActor<BatchChildSettled, BatchPorts>({
  address: BATCH,
  async handle(ctx, job) {
    const outcome = await onChildSettled({ batches: ctx.ports.batches, sessions: ctx.ports.sessions, outbox: ctx }, job);
    if (outcome === 'unknown_batch') ctx.ports.log.warn({ batch_id: job.batch_id, session_id: job.session_id }, 'child settled for an unknown batch; dropped');
    return DONE;
  },
});
