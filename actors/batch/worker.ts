import type { Job } from 'bullmq';
import { once } from '../../src/lifecycle/shutdown.js';
import type { Core } from '../../src/roles/core.js';
import { dataPlane } from '../runtime/data-plane.js';
import { onChildSettled } from './handlers.js';
import { BATCH_QUEUE, type BatchChildSettled } from './messages.js';

/**
 * The batch actor: counts settled children and fires each batch's terminal
 * webhook once. Its handler is idempotent and its writes atomic, so jobs run
 * concurrently, across any number of worker processes.
 */
export async function startBatchActor(core: Core, concurrency: number, lockDurationMs: number): Promise<void> {
  const plane = dataPlane(core);
  const deps = { batches: core.stores.batches, webhooks: plane.webhooks };
  const worker = plane.queues.worker<BatchChildSettled, string>(BATCH_QUEUE, async (job: Job<BatchChildSettled>) => {
    const outcome = await onChildSettled(deps, job.data);
    if (outcome === 'unknown_batch') core.log.warn({ batch_id: job.data.batch_id, session_id: job.data.session_id }, 'child settled for an unknown batch; dropped');
    if (outcome === 'fired') core.log.info({ batch_id: job.data.batch_id }, 'batch terminal webhook enqueued');
    return outcome;
  }, { concurrency, lockDuration: lockDurationMs });
  worker.on('error', (err) => core.log.error({ err: err.message }, 'batch worker error'));
  core.shutdown.add(once('batch-actor', () => worker.close()));
}
