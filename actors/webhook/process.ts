import type { DeliveryAttempt, DeliveryStatus, NewDelivery, WebhookDeliveryDoc, WebhookDeliveryStore } from '../../src/store/webhook-deliveries.js';
import type { DeliveryTarget } from '../../src/store/webhook-configs.js';
import type { WebhookFailure } from '../session/messages.js';
import { buildBody, type BodySources } from './body.js';
import type { RedeliverJob, WebhookJob, WebhookQueueJob } from './messages.js';
import type { WebhookMetrics } from './metrics.js';
import { retryDelayMs } from './schedule.js';
import type { AttemptOutcome, SendRequest } from './send.js';

type Target = DeliveryTarget & { disabled: boolean };
type EventJob = Exclude<WebhookQueueJob, RedeliverJob>;

/** Everything a delivery step touches; the worker wires the real ones. */
export interface DeliveryDeps {
  target(orgId: string, agentId: string): Promise<Target | null>;
  disable(orgId: string, agentId: string, url: string): Promise<boolean>;
  deliveries: WebhookDeliveryStore;
  sources: BodySources;
  send(req: SendRequest): Promise<AttemptOutcome>;
  /** Hands an exhausted session-scoped delivery to the session actor, which records `webhook.delivery_failed`. */
  reportFailure(sessionId: string, messageId: string | null, failure: WebhookFailure): Promise<void>;
  schedule: readonly number[];
  metrics: WebhookMetrics;
}

/** What the worker does with the job next: finish it, or park it until the retry is due. */
export type Step = { kind: 'done' } | { kind: 'retry'; at: number; data: EventJob };

const DONE: Step = { kind: 'done' };

/** The delivery an attempt belongs to: logged already (a retry), or to be logged with its first attempt. */
type Subject = { logged: WebhookDeliveryDoc } | { fresh: NewDelivery };

function eventType(job: WebhookJob): string {
  return job.kind === 'tool.call_requested' ? job.kind : job.type;
}

function subscribed(target: Target | null, type: string): boolean {
  return !!target && !target.disabled && (target.event_types as string[]).includes(type);
}

/** One step of one job on the `webhooks` queue. */
export function deliveryStep(deps: DeliveryDeps, job: WebhookQueueJob, enqueuedAt: number): Promise<Step> {
  if (job.kind === 'redeliver') return redeliver(deps, job);
  return job.delivery_id ? retryStep(deps, job, job.delivery_id) : firstStep(deps, job, enqueuedAt);
}

/**
 * The first attempt: check the subscription, build and serialise the body
 * once, send, then log the delivery with that attempt in one write (the
 * event's latency is one config read, one send and one insert).
 */
async function firstStep(deps: DeliveryDeps, job: EventJob, enqueuedAt: number): Promise<Step> {
  const target = await deps.target(job.org_id, job.agent_id);
  if (!subscribed(target, eventType(job))) return skipped(deps);
  const built = await buildBody(deps.sources, job, new Date(enqueuedAt));
  if (!built) return skipped(deps);
  const outcome = await attempt(deps, built.event_id, built.body, target!);
  deps.metrics.firstAttempt((Date.now() - enqueuedAt) / 1000);
  return settle(deps, job, { fresh: { org_id: job.org_id, agent_id: job.agent_id, ...built } }, target!, outcome);
}

/** A scheduled retry: the logged body, sent again unless the delivery ended or its webhook went away. */
async function retryStep(deps: DeliveryDeps, job: EventJob, deliveryId: string): Promise<Step> {
  const [d, target] = await Promise.all([deps.deliveries.byId(deliveryId), deps.target(job.org_id, job.agent_id)]);
  // Ended meanwhile, by a successful redelivery or a 410.
  if (!d || d.status !== 'pending') return DONE;
  if (!subscribed(target, d.event_type)) return abandon(deps, d, target, d.event_type);
  return settle(deps, job, { logged: d }, target!, await attempt(deps, d.event_id, d.body, target!));
}

function skipped(deps: DeliveryDeps): Step {
  deps.metrics.delivery('skipped');
  return DONE;
}

/** A pending delivery whose webhook was removed, unsubscribed, or disabled by a 410 meanwhile. */
async function abandon(deps: DeliveryDeps, d: WebhookDeliveryDoc, target: Target | null, type: string): Promise<Step> {
  const status: DeliveryStatus = target?.disabled ? 'disabled' : 'failed';
  const reason = !target ? 'webhook configuration removed' : target.disabled ? 'webhook disabled' : `webhook no longer subscribed to ${type}`;
  await deps.deliveries.finish(d._id, status, reason);
  deps.metrics.delivery(status);
  return DONE;
}

async function attempt(deps: DeliveryDeps, eventId: string, body: string, target: Target): Promise<AttemptOutcome> {
  const outcome = await deps.send({ url: target.url, eventId, body, secrets: target.secrets });
  deps.metrics.attempt(outcome.ok ? 'succeeded' : outcome.gone ? 'gone' : outcome.refused ? 'refused' : 'failed');
  return outcome;
}

function attemptRecord(outcome: AttemptOutcome, redelivery: boolean): Omit<DeliveryAttempt, 'number'> {
  return { attempted_at: new Date(), status_code: outcome.status_code, error: outcome.error, duration_ms: outcome.duration_ms, redelivery };
}

async function record(deps: DeliveryDeps, subject: Subject, outcome: AttemptOutcome, status: DeliveryStatus, next: Date | null): Promise<{ id: string; attempts: number }> {
  const rec = attemptRecord(outcome, false);
  if ('fresh' in subject) {
    const doc = await deps.deliveries.insertWithAttempt(subject.fresh, rec, { status, next_attempt_at: next });
    return { id: doc._id, attempts: doc.attempt_count };
  }
  const number = subject.logged.attempt_count + 1;
  await deps.deliveries.recordAttempt(subject.logged._id, number, rec, { status, next_attempt_at: next });
  return { id: subject.logged._id, attempts: number };
}

/** Logs the attempt and decides: done, retry later, or exhausted (and tell the session). */
async function settle(deps: DeliveryDeps, job: EventJob, subject: Subject, target: Target, outcome: AttemptOutcome): Promise<Step> {
  if (outcome.ok || outcome.gone) {
    if (outcome.gone) await deps.disable(job.org_id, job.agent_id, target.url);
    const status = outcome.ok ? 'succeeded' : 'disabled';
    await record(deps, subject, outcome, status, null);
    deps.metrics.delivery(status);
    return DONE;
  }
  const retries = job.retries ?? 0;
  const delay = retryDelayMs(retries, deps.schedule, outcome.retry_after_ms);
  if (delay !== null) {
    const at = Date.now() + delay;
    const { id } = await record(deps, subject, outcome, 'pending', new Date(at));
    return { kind: 'retry', at, data: { ...job, delivery_id: id, retries: retries + 1 } };
  }
  const { id, attempts } = await record(deps, subject, outcome, 'failed', null);
  deps.metrics.delivery('failed');
  const about = 'fresh' in subject ? subject.fresh : subject.logged;
  if (about.session_id) {
    await deps.reportFailure(about.session_id, about.message_id, {
      delivery_id: id,
      webhook_id: about.event_id,
      event_type: about.event_type,
      url: target.url,
      attempts,
      last_error: outcome.error ?? 'delivery failed',
    });
  }
  return DONE;
}

/**
 * A client-requested attempt: same id and body, the webhook's current URL and
 * secrets. It does not start a new retry schedule; a failure leaves a delivery
 * still being retried pending, and any other one failed.
 */
async function redeliver(deps: DeliveryDeps, job: RedeliverJob): Promise<Step> {
  const d = await deps.deliveries.get(job.org_id, job.agent_id, job.delivery_id);
  const target = await deps.target(job.org_id, job.agent_id);
  if (!d || !target || target.disabled) return DONE;
  const outcome = await attempt(deps, d.event_id, d.body, target);
  if (outcome.gone) await deps.disable(job.org_id, job.agent_id, target.url);
  const retrying = d.status === 'pending' && d.next_attempt_at !== null;
  const status: DeliveryStatus = outcome.ok ? 'succeeded' : outcome.gone ? 'disabled' : retrying ? 'pending' : 'failed';
  await deps.deliveries.recordAttempt(d._id, d.attempt_count + 1, attemptRecord(outcome, true), { status, next_attempt_at: status === 'pending' ? d.next_attempt_at : null });
  return DONE;
}
