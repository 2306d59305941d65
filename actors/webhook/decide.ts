import { wellFormedJson } from '../../src/domain/well-formed.js';
import type { DeliveryStatus, WebhookDeliveryDoc } from '../../src/domain/views/webhook-delivery.js';
import type { DeliveryTarget } from '../../src/store/webhook-configs.js';
import type { Send } from '../../src/domain/actors/address.js';
import type { WebhookFailureReason } from '../../src/domain/event-data.js';
import { deliveryFailed, sessionCommand, type WebhookFailure } from '../../src/domain/actors/session.js';
import { webhookEventId, type LifecycleSession, type RedeliverJob, type WebhookJob, type WebhookQueueJob } from '../../src/domain/actors/webhook.js';
import type { AttemptResult, DeliveryResult } from './metrics.js';
import { retryDelayMs } from './schedule.js';
import type { AttemptOutcome } from './send.js';

/**
 * The webhook actor's decisions, pure so unit tests call them directly:
 * before an attempt (send, skip, or end the delivery) and after it (record
 * as what, retry when, tell the session). The POST itself is the activity's
 * own work (`send.ts`); `process.ts` reads, calls these, and writes.
 */

export type Target = DeliveryTarget & { disabled: boolean };
export type EventJob = Exclude<WebhookQueueJob, RedeliverJob>;

export function eventType(job: WebhookJob): string {
  return job.kind === 'tool.call_requested' || job.kind === 'tool.confirmation_requested' || job.kind === 'budget.threshold_reached' ? job.kind : job.type;
}

/** Whether the agent's webhook takes this event type now (a disabled webhook takes none). */
export function subscribed(target: Target | null, type: string): target is Target & { disabled: false } {
  return !!target && !target.disabled && (target.event_types as string[]).includes(type);
}

/** What a batch event carries besides its status: the children counted when the body is built. */
export interface BatchFacts {
  counts: Record<string, number>;
}

/** What was read for an event's body: its session (session events), its batch's counts (batch events), or nothing. */
export interface BodyFacts {
  session?: LifecycleSession | null;
  batch?: BatchFacts | null;
}

/** The first time a delivery is logged: what it is about and its body, serialised once for every attempt. */
export type BuiltBody = Pick<WebhookDeliveryDoc, 'event_id' | 'event_type' | 'session_id' | 'message_id' | 'batch_id' | 'body'>;

/**
 * The wire body of an event (spec: Webhook deliveries), well formed like the ledger: a tool call's arguments are
 * the model's, which may hold a lone surrogate that receivers' strict parsers refuse. Lifecycle bodies
 * carry the session's fields as the turn that ended the message left them
 * (the job carries them; older jobs read the session when the delivery is
 * first built); the receiver calls GET for the state after that. Null when the subject is
 * gone or belongs to another org (nothing to deliver).
 */
export function buildBody(job: WebhookJob, facts: BodyFacts, createdAt: Date): BuiltBody | null {
  const id = webhookEventId(job);
  switch (job.kind) {
    case 'tool.call_requested':
    case 'tool.confirmation_requested':
      return { event_id: id, event_type: job.kind, session_id: job.session_id, message_id: job.body.message_id, batch_id: null, body: wellFormedJson(job.body) };
    case 'session.lifecycle': {
      const s = facts.session;
      if (!s || s.org_id !== job.org_id) return null;
      const data = {
        session_id: s._id,
        batch_id: s.batch_id ?? null,
        agent_id: s.agent_id,
        version_id: s.version_id,
        llm_id: s.llm_id,
        status: s.status,
        last_message_status: s.last_message_status,
        metadata: s.metadata ?? {},
      };
      return { event_id: id, event_type: job.type, session_id: s._id, message_id: job.message_id, batch_id: s.batch_id ?? null, body: wellFormedJson({ id, type: job.type, created_at: createdAt.toISOString(), data }) };
    }
    case 'batch.lifecycle': {
      // The event names the terminal status it reports; counts come from the children, the source of truth.
      const data = { batch_id: job.batch_id, agent_id: job.agent_id, status: job.type.slice('batch.'.length), counts: facts.batch?.counts ?? null };
      return { event_id: id, event_type: job.type, session_id: null, message_id: null, batch_id: job.batch_id, body: wellFormedJson({ id, type: job.type, created_at: createdAt.toISOString(), data }) };
    }
    case 'budget.threshold_reached':
      return { event_id: id, event_type: job.kind, session_id: null, message_id: null, batch_id: null, body: wellFormedJson(job.body) };
  }
}

/** The metric label of one attempt. */
export function attemptResult(outcome: AttemptOutcome): AttemptResult {
  return outcome.ok ? 'succeeded' : outcome.gone ? 'gone' : outcome.refused ? 'refused' : 'failed';
}

/**
 * A scheduled retry of a logged delivery: send it again, stop because it
 * ended meanwhile (a successful redelivery or a 410), or end it because its
 * webhook was removed, unsubscribed or disabled meanwhile, or because it is
 * a tool call past its `expires_at` (the call has failed; its result would
 * be refused).
 */
export function retryStep(d: WebhookDeliveryDoc | null, target: Target | null, now = Date.now()):
  | { kind: 'done' }
  | { kind: 'abandon'; delivery_id: string; status: DeliveryStatus & DeliveryResult; reason: string; code: WebhookFailureReason }
  | { kind: 'send'; delivery: WebhookDeliveryDoc; target: Target } {
  if (!d || d.status !== 'pending') return { kind: 'done' };
  const expires = expiresAt(d);
  if (expires !== null && expires <= now) return { kind: 'abandon', delivery_id: d._id, status: 'failed', reason: `tool call expired at ${new Date(expires).toISOString()}`, code: 'expired' };
  if (subscribed(target, d.event_type)) return { kind: 'send', delivery: d, target };
  const status = target?.disabled ? 'disabled' : 'failed';
  const reason = !target ? 'webhook configuration removed' : target.disabled ? 'webhook disabled' : `webhook no longer subscribed to ${d.event_type}`;
  const code = !target ? 'config_deleted' : target.disabled ? 'disabled' : 'unsubscribed';
  return { kind: 'abandon', delivery_id: d._id, status, reason, code };
}

/** A tool.call_requested or tool.confirmation_requested delivery's `expires_at` (epoch ms); null for other events or an unreadable body. */
function expiresAt(d: Pick<WebhookDeliveryDoc, 'event_type' | 'body'>): number | null {
  if (d.event_type !== 'tool.call_requested' && d.event_type !== 'tool.confirmation_requested') return null;
  try {
    const at = Date.parse((JSON.parse(d.body) as { expires_at?: string }).expires_at ?? '');
    return Number.isNaN(at) ? null : at;
  } catch {
    return null;
  }
}

/** What an attempt of the schedule ends as: how to record it, and what follows. */
export type Settlement =
  /** Ended: delivered, or a 410 (the webhook is disabled first, so no other event is sent to it). */
  | { kind: 'ended'; status: 'succeeded' | 'disabled'; disable: boolean }
  /** Recorded pending; the job runs again at `at` as retry number `retries`. */
  | { kind: 'retry'; at: number; retries: number }
  /** The schedule is exhausted: recorded failed, and a session-scoped delivery is reported to its session. */
  | { kind: 'exhausted' };

/** After an attempt of the delivery's own schedule. `random` is the jitter's source (tests pin it). */
export function settle(job: Pick<EventJob, 'retries'>, outcome: AttemptOutcome, schedule: readonly number[], now: number, random: () => number = Math.random): Settlement {
  if (outcome.ok || outcome.gone) return { kind: 'ended', status: outcome.ok ? 'succeeded' : 'disabled', disable: outcome.gone };
  const retries = job.retries ?? 0;
  const delay = retryDelayMs(retries, schedule, outcome.retry_after_ms, random);
  return delay === null ? { kind: 'exhausted' } : { kind: 'retry', at: now + delay, retries: retries + 1 };
}

/** The job parked for the retry: it now names its logged delivery, so the retry reads it by id. */
export function retryJob(job: EventJob, deliveryId: string, retries: number): EventJob {
  return { ...job, delivery_id: deliveryId, retries };
}

/**
 * What the session records as `webhook.delivery_failed` when a delivery about
 * it ends without success: exhausted, a 410, or ended while pending (expired,
 * webhook disabled, removed or unsubscribed). Its command id is the
 * delivery's, so a repeated report is one command; null for deliveries about
 * no session.
 */
export function failureReport(
  about: Pick<WebhookDeliveryDoc, 'session_id' | 'message_id' | 'event_id' | 'event_type'>,
  logged: { id: string; attempts: number },
  url: string,
  reason: WebhookFailureReason,
  lastError: string | null,
): Send | null {
  if (!about.session_id) return null;
  const delivery: WebhookFailure = { delivery_id: logged.id, webhook_id: about.event_id, event_type: about.event_type, url, attempts: logged.attempts, last_error: lastError ?? 'delivery failed', reason };
  return sessionCommand(about.session_id, deliveryFailed(about.message_id, delivery));
}

/** A client's redelivery is attempted only for a logged delivery whose webhook is there and enabled. */
export function redeliverable(d: WebhookDeliveryDoc | null, target: Target | null): target is Target & { disabled: false } {
  return !!d && !!target && !target.disabled;
}

/**
 * After a client-requested attempt (same id and body, the webhook's current
 * URL and secrets). It starts no new schedule: a failure leaves a delivery
 * still being retried pending with its next attempt, and any other failed.
 */
export function afterRedelivery(d: Pick<WebhookDeliveryDoc, 'status' | 'next_attempt_at'>, outcome: AttemptOutcome): { status: DeliveryStatus; next_attempt_at: Date | null; disable: boolean } {
  const retrying = d.status === 'pending' && d.next_attempt_at !== null;
  const status: DeliveryStatus = outcome.ok ? 'succeeded' : outcome.gone ? 'disabled' : retrying ? 'pending' : 'failed';
  return { status, next_attempt_at: status === 'pending' ? d.next_attempt_at : null, disable: outcome.gone };
}

/** Re-runs of a step after store or queue errors before the job fails; about 13.5 min of backoff in all. */
export const INFRA_RETRIES = 12;

/**
 * A store or queue error (a Redis blip) is not the receiver's failure and
 * must not lose the event: the step runs again after a backoff, up to
 * INFRA_RETRIES times; null when the job should fail instead.
 */
export function infraRetry(job: WebhookQueueJob, now: number): { at: number; delay_ms: number; data: WebhookQueueJob } | null {
  const n = job.infra_retries ?? 0;
  if (n >= INFRA_RETRIES) return null;
  const delay_ms = Math.min(5 * 60_000, 250 * 2 ** n);
  return { at: now + delay_ms, delay_ms, data: { ...job, infra_retries: n + 1 } };
}
