import type { BatchStore } from '../../src/store/batches.js';
import { defineActor, DONE } from '../runtime/actor.js';
import { onChildSettled } from './handlers.js';
import { BATCH, type BatchChildSettled } from './messages.js';

export interface BatchPorts {
  batches: BatchStore;
  log: { warn(obj: object, msg: string): void };
}

/**
 * The batch actor: counts settled children and fires each batch's terminal
 * webhook once. Its handler is idempotent and its writes atomic, so it is
 * unkeyed: messages run concurrently, across any number of processes.
 */
export const batchActor = defineActor<BatchChildSettled, BatchPorts>({
  address: BATCH,
  async handle(ctx, job) {
    const outcome = await onChildSettled({ batches: ctx.ports.batches, outbox: { send: (s) => ctx.send(s) } }, job);
    if (outcome === 'unknown_batch') ctx.ports.log.warn({ batch_id: job.batch_id, session_id: job.session_id }, 'child settled for an unknown batch; dropped');
    return DONE;
  },
});
