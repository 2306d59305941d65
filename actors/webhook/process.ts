import type { NewDelivery, WebhookDeliveryStore } from '../../src/store/webhook-deliveries.js';
import type { Send } from '../../src/domain/actors/address.js';
import type { DeliveryAttempt, DeliveryStatus, WebhookDeliveryDoc } from '../../src/domain/views/webhook-delivery.js';
import { readBodyFacts, type BodySources } from './body.js';
import { afterRedelivery, attemptResult, buildBody, eventType, failureReport, redeliverable, retryJob, retryStep, settle, subscribed, type EventJob, type Target } from './decide.js';
import type { RedeliverJob, WebhookQueueJob } from '../../src/domain/actors/webhook.js';
import type { WebhookMetrics } from './metrics.js';
import type { AttemptOutcome, SendRequest } from './send.js';

/** Everything a delivery step touches; the worker wires the real ones. */
export interface DeliveryDeps {
  target(orgId: string, agentId: string): Promise<Target | null>;
  disable(orgId: string, agentId: string, url: string): Promise<boolean>;
  deliveries: WebhookDeliveryStore;
  sources: BodySources;
  send(req: SendRequest): Promise<AttemptOutcome>;
  schedule: readonly number[];
  metrics: WebhookMetrics;
}

/**
 * What the worker does with the job next: finish it, handing off `sends` (an exhausted session-scoped delivery goes
 * to the session actor, which records `webhook.delivery_failed`), or park it until the retry is due.
 */
export type Step = { kind: 'done'; sends?: Send[] } | { kind: 'retry'; at: number; data: EventJob };

const DONE: Step = { kind: 'done' };

/** The delivery an attempt belongs to: logged already (a retry), or to be logged with its first attempt. */
type Subject = { logged: WebhookDeliveryDoc } | { fresh: NewDelivery };

/**
 * One step of one job on the `webhooks` queue: reads, the decisions of
 * `decide.ts`, the attempt, and the writes they call for.
 */
export function deliveryStep(deps: DeliveryDeps, job: WebhookQueueJob, enqueuedAt: number): Promise<Step> {
  if (job.kind === 'redeliver') return redeliver(deps, job);
  return job.delivery_id ? retry(deps, job, job.delivery_id) : first(deps, job, enqueuedAt);
}

/**
 * The first attempt: check the subscription, build and serialise the body
 * once, send, then log the delivery with that attempt in one write (the
 * event's latency is one config read, one send and one insert).
 */
async function first(deps: DeliveryDeps, job: EventJob, enqueuedAt: number): Promise<Step> {
  const target = await deps.target(job.org_id, job.agent_id);
  if (!subscribed(target, eventType(job))) return skipped(deps);
  const built = buildBody(job, await readBodyFacts(deps.sources, job), new Date(enqueuedAt));
  // The subject is gone or is another org's: nothing to deliver.
  if (!built) return skipped(deps);
  const outcome = await attempt(deps, built.event_id, built.body, target);
  deps.metrics.firstAttempt((Date.now() - enqueuedAt) / 1000);
  return record(deps, job, { fresh: { org_id: job.org_id, agent_id: job.agent_id, ...built } }, target, outcome);
}

/** A scheduled retry: the logged body, sent again unless the delivery ended or its webhook went away. */
async function retry(deps: DeliveryDeps, job: EventJob, deliveryId: string): Promise<Step> {
  const [d, target] = await Promise.all([deps.deliveries.byId(deliveryId), deps.target(job.org_id, job.agent_id)]);
  const step = retryStep(d, target);
  if (step.kind === 'abandon') {
    await deps.deliveries.finish(step.delivery_id, step.status, step.reason);
    deps.metrics.delivery(step.status);
    const report = failureReport(d!, { id: d!._id, attempts: d!.attempt_count }, target?.url ?? '', step.code, step.reason);
    return report ? { kind: 'done', sends: [report] } : DONE;
  }
  if (step.kind !== 'send') return DONE;
  return record(deps, job, { logged: step.delivery }, step.target, await attempt(deps, step.delivery.event_id, step.delivery.body, step.target));
}

function skipped(deps: DeliveryDeps): Step {
  deps.metrics.delivery('skipped');
  return DONE;
}

async function attempt(deps: DeliveryDeps, eventId: string, body: string, target: Target): Promise<AttemptOutcome> {
  const outcome = await deps.send({ url: target.url, eventId, body, secrets: target.secrets });
  deps.metrics.attempt(attemptResult(outcome));
  return outcome;
}

function attemptRecord(outcome: AttemptOutcome, redelivery: boolean): Omit<DeliveryAttempt, 'number'> {
  return { attempted_at: new Date(), status_code: outcome.status_code, error: outcome.error, duration_ms: outcome.duration_ms, redelivery };
}

/** Writes the attempt: the delivery with it (first attempt) or the attempt onto the logged delivery. */
async function log(deps: DeliveryDeps, subject: Subject, outcome: AttemptOutcome, status: DeliveryStatus, next: Date | null): Promise<{ id: string; attempts: number }> {
  const rec = attemptRecord(outcome, false);
  if ('fresh' in subject) {
    const doc = await deps.deliveries.insertWithAttempt(subject.fresh, rec, { status, next_attempt_at: next });
    return { id: doc._id, attempts: doc.attempt_count };
  }
  const number = subject.logged.attempt_count + 1;
  await deps.deliveries.recordAttempt(subject.logged._id, number, rec, { status, next_attempt_at: next });
  return { id: subject.logged._id, attempts: number };
}

/** Records an attempt of the schedule as `settle` decides: ended, retry later, or exhausted (and tell the session). */
async function record(deps: DeliveryDeps, job: EventJob, subject: Subject, target: Target, outcome: AttemptOutcome): Promise<Step> {
  const s = settle(job, outcome, deps.schedule, Date.now());
  if (s.kind === 'ended') {
    if (s.disable) await deps.disable(job.org_id, job.agent_id, target.url);
    const logged = await log(deps, subject, outcome, s.status, null);
    deps.metrics.delivery(s.status);
    const report = s.disable ? failureReport('fresh' in subject ? subject.fresh : subject.logged, logged, target.url, 'gone', outcome.error) : null;
    return report ? { kind: 'done', sends: [report] } : DONE;
  }
  if (s.kind === 'retry') {
    const { id } = await log(deps, subject, outcome, 'pending', new Date(s.at));
    return { kind: 'retry', at: s.at, data: retryJob(job, id, s.retries) };
  }
  const logged = await log(deps, subject, outcome, 'failed', null);
  deps.metrics.delivery('failed');
  const report = failureReport('fresh' in subject ? subject.fresh : subject.logged, logged, target.url, 'retries_exhausted', outcome.error);
  return report ? { kind: 'done', sends: [report] } : DONE;
}

/** A client-requested attempt; `afterRedelivery` decides how it is recorded. */
async function redeliver(deps: DeliveryDeps, job: RedeliverJob): Promise<Step> {
  const d = await deps.deliveries.get(job.org_id, job.agent_id, job.delivery_id);
  const target = await deps.target(job.org_id, job.agent_id);
  if (!d || !redeliverable(d, target)) return DONE;
  const outcome = await attempt(deps, d.event_id, d.body, target);
  const after = afterRedelivery(d, outcome);
  if (after.disable) await deps.disable(job.org_id, job.agent_id, target.url);
  await deps.deliveries.recordAttempt(d._id, d.attempt_count + 1, attemptRecord(outcome, true), { status: after.status, next_attempt_at: after.next_attempt_at });
  return DONE;
}
