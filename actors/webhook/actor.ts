import { defineActor, DONE } from '../runtime/actor.js';
import { infraRetry } from './decide.js';
import { WEBHOOKS, type WebhookQueueJob } from '../../src/domain/actors/webhook.js';
import { deliveryStep, type DeliveryDeps } from './process.js';

export type WebhookPorts = DeliveryDeps & { log: { warn(obj: object, msg: string): void } };

/**
 * The webhook delivery actor (an activity): sends signed deliveries and
 * retries them on its own schedule. A retry parks the same job until it is
 * due (the runtime's `later`), so each attempt is one processing of the job
 * and is logged, and the job id keeps deduplicating the event meanwhile. A
 * store or queue error (a Redis blip) is parked and re-run with backoff too
 * (`infraRetry`).
 */
export const webhookActor = defineActor<WebhookQueueJob, WebhookPorts>({
  address: WEBHOOKS,
  // An agent has one webhook endpoint: its deliveries (and redeliveries) share its cap, so a slow receiver waits behind itself.
  limitKey: (job) => job.agent_id,
  async handle(ctx, job) {
    try {
      const step = await deliveryStep(ctx.ports, job, ctx.job.enqueued_at);
      if (step.kind === 'retry') return { later: { at: step.at, data: step.data } };
      return step.sends ? { sends: step.sends } : DONE;
    } catch (err) {
      const again = infraRetry(job, Date.now());
      if (!again) throw err;
      ctx.ports.log.warn({ job_id: ctx.job.id, err: (err as Error).message, retry_in_ms: again.delay_ms }, 'webhook step failed; retrying');
      return { later: { at: again.at, data: again.data } };
    }
  },
});
