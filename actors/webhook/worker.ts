import { DelayedError, type Job } from 'bullmq';
import { once } from '../../src/lifecycle/shutdown.js';
import type { Resolver } from '../../src/net/resolver.js';
import type { Core } from '../../src/roles/core.js';
import { dataPlane } from '../runtime/data-plane.js';
import { readBatch } from '../../src/batches/read-batch.js';
import { BatchStore } from '../../src/store/batches.js';
import { WEBHOOK_QUEUE, type WebhookQueueJob } from './messages.js';
import { webhookMetrics } from './metrics.js';
import { deliveryStep, type DeliveryDeps } from './process.js';
import { WebhookSender } from './send.js';

/** Re-runs of a step after store or queue errors before the job fails; about 17 min of backoff in all. */
const INFRA_RETRIES = 12;

/**
 * Runs one delivery step. A store or queue error (FerretDB busy, a Redis
 * blip) is not the receiver's failure and must not lose the event, but jobs
 * run once (`attempts: 1`): so the job is parked and re-run, with backoff.
 */
async function stepOrRetry(core: Core, deps: DeliveryDeps, job: Job<WebhookQueueJob>): Promise<{ at: number; data: WebhookQueueJob } | null> {
  try {
    const step = await deliveryStep(deps, job.data, job.timestamp);
    return step.kind === 'done' ? null : step;
  } catch (err) {
    const n = job.data.infra_retries ?? 0;
    if (n >= INFRA_RETRIES) throw err;
    const delay = Math.min(5 * 60_000, 250 * 2 ** n);
    core.log.warn({ job_id: job.id, err: (err as Error).message, retry_in_ms: delay }, 'webhook step failed; retrying');
    return { at: Date.now() + delay, data: { ...job.data, infra_retries: n + 1 } };
  }
}

export interface WebhookActorOptions {
  /** Name resolution for the SSRF guard; tests inject one they control. */
  resolver?: Resolver;
}

/**
 * The webhook delivery actor: consumes the `webhooks` queue, sends signed
 * deliveries and retries them on its own schedule. A retry parks the same
 * job in BullMQ's delayed set (moveToDelayed), so each attempt is one
 * processing of the job and is logged, and the job id keeps deduplicating
 * the event while it is being retried.
 */
export async function startWebhookActor(core: Core, opts: WebhookActorOptions = {}): Promise<void> {
  const plane = dataPlane(core);
  const { config } = core;
  const sender = new WebhookSender({ allowPrivate: config.webhooksAllowPrivate, timeoutMs: config.webhookTimeoutMs, resolver: opts.resolver });
  const batches = new BatchStore(core.db);
  const deps: DeliveryDeps = {
    target: (org, agent) => core.stores.webhookConfigs.deliveryTarget(org, agent),
    disable: (org, agent, url) => core.stores.webhookConfigs.disable(org, agent, url),
    deliveries: core.stores.webhookDeliveries,
    sources: { session: (id) => core.stores.sessions.byId(id), batch: (org, id) => readBatch(batches, core.stores.sessions, org, id).then((b) => ({ counts: { ...b.counts } }), () => null) },
    send: (req) => sender.send(req),
    reportFailure: (sessionId, messageId, failure) =>
      plane.mailbox.send({ session_id: sessionId, command: { kind: 'webhook.delivery_failed', command_id: `whf-${failure.delivery_id}`, message_id: messageId, delivery: failure } }),
    schedule: config.webhookRetrySchedule,
    metrics: webhookMetrics(core.metrics.registry),
  };
  const worker = plane.queues.worker<WebhookQueueJob, void>(
    WEBHOOK_QUEUE,
    async (job: Job<WebhookQueueJob>, token?: string) => {
      const next = await stepOrRetry(core, deps, job);
      if (!next) return;
      await job.updateData(next.data);
      await job.moveToDelayed(next.at, token);
      throw new DelayedError();
    },
    // An attempt may take the whole timeout; the lock must outlast it.
    { concurrency: config.webhookConcurrency, lockDuration: Math.max(30_000, config.webhookTimeoutMs * 2 + 10_000) },
  );
  worker.on('error', (err) => core.log.error({ err: err.message }, 'webhook worker error'));
  worker.on('failed', (job, err) => core.log.warn({ job_id: job?.id, err: err.message }, 'webhook job failed'));
  // Stop taking jobs first, then drop the connection pool the attempts use.
  core.shutdown.add(once('webhook-sender', () => sender.close()));
  core.shutdown.add(once('webhook-actor', () => worker.close()));
}
