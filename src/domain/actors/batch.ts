import { actorAddress } from './address.js';

/**
 * Jobs of the batch actor (queue `batches`): a child session of a batch
 * settled one message; the actor counts it once and, when every child is
 * terminal, fires the batch's terminal webhook exactly once.
 */
export const BATCH = actorAddress('batches', { attempts: 8 });

export interface BatchChildSettled {
  org_id: string;
  batch_id: string;
  session_id: string;
  message_id: string;
  status: 'completed' | 'failed' | 'cancelled';
}

export function batchJobId(job: Pick<BatchChildSettled, 'session_id' | 'message_id'>): string {
  return `batch-${job.session_id}-${job.message_id}`;
}
