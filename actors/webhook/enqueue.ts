import { newId } from '../../src/domain/ids.js';
import type { Send } from '../../src/domain/actors/address.js';
import { WEBHOOKS, type RedeliverJob } from '../../src/domain/actors/webhook.js';

/** A client's request for one more attempt of a logged delivery, now. Each request is its own job. */
export function redeliverySend(job: Omit<RedeliverJob, 'kind'>): Send {
  const data: RedeliverJob = { kind: 'redeliver', ...job };
  return { to: WEBHOOKS, name: 'redeliver', data, job_id: `whr-${job.delivery_id}-${newId('request')}` };
}
