import type { SessionState } from '../ledger.js';
import type { EventData } from '../event-data.js';
import { newId } from '../ids.js';
import { actorAddress, safeJobId, type Send } from './address.js';

/**
 * Jobs of the webhook delivery actor (queue `webhooks`). Producers (the
 * session and batch actors) enqueue one job per event with a deterministic
 * job id; the actor checks the agent's subscription, builds the body, signs,
 * delivers and retries.
 */
/**
 * Deliveries retry on their own schedule (moved to delayed), so a job is attempted once by BullMQ. An event's job
 * id is remembered for an hour from its send, however many webhooks went out meanwhile: a session turn's replay
 * (its effects handed off again after a crash) sends it again, and would otherwise POST an event the receiver
 * already has once its finished job was dropped (docs/reliability.md, Webhooks are at least once).
 */
export const WEBHOOKS = actorAddress('webhooks', { attempts: 1, rememberMs: 3_600_000 });

/** Body of a `tool.call_requested` delivery: exactly the spec's fields, and the ledger event's data. */
export type ToolCallRequestedBody = EventData['tool.call_requested'];

/**
 * Body of a `tool.confirmation_requested` delivery: the ledger event's data, with the id, type and session that
 * tool.call_requested's body carries too, and where to answer.
 */
export type ToolConfirmationRequestedBody = EventData['tool.confirmation_requested'] & { id: string; type: 'tool.confirmation_requested'; session_id: string; submit_url: string };

/** The session fields a lifecycle body reports (spec: Webhook deliveries); a session document has them all. */
export interface LifecycleSession extends Pick<SessionState, 'status' | 'last_message_status'> {
  _id: string;
  org_id: string;
  batch_id: string | null;
  agent_id: string;
  version_id: string;
  llm_id: string;
  metadata: Record<string, string>;
}

export type WebhookJob =
  | { kind: 'tool.call_requested'; org_id: string; agent_id: string; session_id: string; body: ToolCallRequestedBody }
  | { kind: 'tool.confirmation_requested'; org_id: string; agent_id: string; session_id: string; body: ToolConfirmationRequestedBody }
  | {
      kind: 'session.lifecycle';
      org_id: string;
      agent_id: string;
      session_id: string;
      message_id: string;
      type: 'session.completed' | 'session.failed';
      /**
       * The session as the turn that ended the message left it. The turn hands
       * this job off before its session document is written, so the body is
       * built from this, not from a read; absent in jobs of older builds.
       */
      session?: LifecycleSession;
    }
  | { kind: 'batch.lifecycle'; org_id: string; agent_id: string; batch_id: string; type: 'batch.completed' | 'batch.failed' | 'batch.partial_failed' }
  /** An org's or a key's budget passed a threshold: one job per agent webhook of the org that takes the type (docs/budgets.md). */
  | { kind: 'budget.threshold_reached'; org_id: string; agent_id: string; body: BudgetThresholdBody };

/** Body of a `budget.threshold_reached` delivery: `{id, type, created_at, data}`, data as the ledger event's. */
export interface BudgetThresholdBody {
  id: string;
  type: 'budget.threshold_reached';
  created_at: string;
  data: EventData['budget.threshold_reached'];
}

/** A `tool.call_requested` event's id (its body's `id`): one per tool call, whatever delivers it. */
export function toolCallEventId(sessionId: string, messageId: string, toolCallId: string): string {
  return `${sessionId}:${messageId}:${toolCallId}`;
}

/** A `tool.confirmation_requested` event's id: apart from the same call's `tool.call_requested`, which an allowed external call gets next. */
export function toolConfirmationEventId(sessionId: string, messageId: string, toolCallId: string): string {
  return `${toolCallEventId(sessionId, messageId, toolCallId)}:confirmation`;
}

/** The webhook `id` (and job id base): the same on every retry of one event. */
export function webhookEventId(job: WebhookJob): string {
  switch (job.kind) {
    case 'tool.call_requested':
    case 'tool.confirmation_requested':
      return job.body.id;
    case 'session.lifecycle':
      return `${job.session_id}:${job.message_id}:${job.type}`;
    case 'batch.lifecycle':
      return `${job.batch_id}:${job.type}`;
    case 'budget.threshold_reached':
      return job.body.id;
  }
}

/** BullMQ job ids may not contain ':'. */
export function webhookJobId(job: WebhookJob): string {
  return safeJobId(`wh-${webhookEventId(job)}`);
}

/** A client's POST .../redeliver: one more attempt now, with the delivery's stored id and body. */
export interface RedeliverJob {
  kind: 'redeliver';
  org_id: string;
  agent_id: string;
  delivery_id: string;
}

/**
 * What a job on the `webhooks` queue carries. The actor adds `delivery_id`
 * once the delivery is logged and `retries` as it retries, so a retry reads
 * its delivery by id.
 */
export type WebhookQueueJob = ((WebhookJob & { delivery_id?: string; retries?: number }) | RedeliverJob) & {
  /** Re-runs after a store or queue error (not a receiver failure). */
  infra_retries?: number;
};

/** A delivery job for one event; its id makes a repeated send one delivery. */
export function webhookSend(job: WebhookJob): Send {
  return { to: WEBHOOKS, name: job.kind, data: job, job_id: webhookJobId(job) };
}

/** A client's request for one more attempt of a logged delivery, now. Each request is its own job. */
export function redeliverySend(job: Omit<RedeliverJob, 'kind'>): Send {
  const data: RedeliverJob = { kind: 'redeliver', ...job };
  return { to: WEBHOOKS, name: 'redeliver', data, job_id: `whr-${job.delivery_id}-${newId('request')}` };
}
