/** An agent's webhook configuration as stored (secrets sealed) and as the API shows it (never a secret). */
import type { Sealed } from '../sealed.js';

/** Event types a webhook may subscribe to (spec: Agent webhook). */
export const WEBHOOK_EVENT_TYPES = [
  'tool.call_requested',
  'session.completed',
  'session.failed',
  'batch.completed',
  'batch.failed',
  'batch.partial_failed',
  'tool.confirmation_requested',
  'budget.threshold_reached',
] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export interface WebhookConfigDoc {
  _id: string;
  org_id: string;
  agent_id: string;
  url: string;
  event_types: WebhookEventType[];
  secret: Sealed;
  previous_secret: Sealed | null;
  previous_secret_expires_at: Date | null;
  /** Set when the receiver answered 410 Gone; deliveries stop until the next PUT. Absent on older records. */
  disabled_at?: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface WebhookConfigView {
  webhook_url: string | null;
  signing_enabled: boolean;
  event_types: WebhookEventType[];
  /** Present only while deliveries are stopped by a 410 Gone; a PUT re-enables. */
  disabled_at?: string;
}

export function webhookConfigView(doc: WebhookConfigDoc | null): WebhookConfigView {
  if (!doc) return { webhook_url: null, signing_enabled: false, event_types: [] };
  const view: WebhookConfigView = { webhook_url: doc.url, signing_enabled: true, event_types: doc.event_types };
  if (doc.disabled_at) view.disabled_at = doc.disabled_at.toISOString();
  return view;
}
