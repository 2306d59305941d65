import { defineActor, DONE } from '../runtime/actor.js';
import { sessionCommand } from '../session/messages.js';
import { WEBHOOKS, type WebhookQueueJob } from './messages.js';
import { deliveryStep, type DeliveryDeps } from './process.js';

/** Re-runs of a step after store or queue errors before the job fails; about 17 min of backoff in all. */
const INFRA_RETRIES = 12;

export type WebhookPorts = Omit<DeliveryDeps, 'reportFailure'> & { log: { warn(obj: object, msg: string): void } };

/**
 * The webhook delivery actor (an activity): sends signed deliveries and
 * retries them on its own schedule. A retry parks the same job until it is
 * due (the runtime's `later`), so each attempt is one processing of the job
 * and is logged, and the job id keeps deduplicating the event meanwhile. A
 * store or queue error (a Redis blip) is not the receiver's failure and must
 * not lose the event: the step is parked and re-run with backoff too.
 */
export const webhookActor = defineActor<WebhookQueueJob, WebhookPorts>({
  address: WEBHOOKS,
  async handle(ctx, job) {
    const deps: DeliveryDeps = {
      ...ctx.ports,
      // An exhausted session-scoped delivery is recorded in the session's ledger by the session actor.
      reportFailure: (sessionId, messageId, delivery) =>
        ctx.send([sessionCommand(sessionId, { kind: 'webhook.delivery_failed', command_id: `whf-${delivery.delivery_id}`, message_id: messageId, delivery })]),
    };
    try {
      const step = await deliveryStep(deps, job, ctx.job.enqueued_at);
      return step.kind === 'done' ? DONE : { later: { at: step.at, data: step.data } };
    } catch (err) {
      const n = job.infra_retries ?? 0;
      if (n >= INFRA_RETRIES) throw err;
      const delay = Math.min(5 * 60_000, 250 * 2 ** n);
      ctx.ports.log.warn({ job_id: ctx.job.id, err: (err as Error).message, retry_in_ms: delay }, 'webhook step failed; retrying');
      return { later: { at: Date.now() + delay, data: { ...job, infra_retries: n + 1 } } };
    }
  },
});
