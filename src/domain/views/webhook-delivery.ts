/** A webhook delivery and its attempt log as stored, and as the API shows them. */

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed' | 'disabled';

/** One attempt in the delivery log. Objects in an array: FerretDB v1 rejects nested arrays. */
export interface DeliveryAttempt {
  number: number;
  attempted_at: Date;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  /** Sent because a client asked (POST .../redeliver), not by the retry schedule. */
  redelivery: boolean;
}

/**
 * One event's delivery to an agent's webhook: the body exactly as first
 * serialised (so every attempt sends the same bytes) and every attempt made.
 */
export interface WebhookDeliveryDoc {
  _id: string;
  org_id: string;
  agent_id: string;
  event_id: string;
  event_type: string;
  session_id: string | null;
  message_id: string | null;
  batch_id: string | null;
  body: string;
  status: DeliveryStatus;
  attempts: DeliveryAttempt[];
  attempt_count: number;
  last_status_code: number | null;
  last_error: string | null;
  last_attempt_at: Date | null;
  next_attempt_at: Date | null;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}

export interface DeliveryView {
  id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  session_id: string | null;
  batch_id: string | null;
  created_at: string;
  updated_at: string;
  last_attempt_at: string | null;
  next_attempt_at: string | null;
  completed_at: string | null;
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export function deliveryView(d: WebhookDeliveryDoc): DeliveryView {
  return {
    id: d._id,
    event_id: d.event_id,
    event_type: d.event_type,
    status: d.status,
    attempts: d.attempt_count,
    last_status_code: d.last_status_code,
    last_error: d.last_error,
    session_id: d.session_id,
    batch_id: d.batch_id,
    created_at: d.created_at.toISOString(),
    updated_at: d.updated_at.toISOString(),
    last_attempt_at: iso(d.last_attempt_at),
    next_attempt_at: iso(d.next_attempt_at),
    completed_at: iso(d.completed_at),
  };
}

/** A view with each attempt, for the single-delivery read. */
export function deliveryDetailView(d: WebhookDeliveryDoc): DeliveryView & { attempt_log: object[] } {
  return {
    ...deliveryView(d),
    attempt_log: d.attempts.map((a) => ({ ...a, attempted_at: a.attempted_at.toISOString() })),
  };
}
