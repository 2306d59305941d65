import type { FromSchema } from 'json-schema-to-ts';
import type { EVENT_DATA_SCHEMAS } from './event-schemas.js';
import type { EventType } from './ledger.js';

/**
 * What each ledger event type carries in `data`, as the session actor appends it: derived by FromSchema from the
 * schemas in event-schemas.ts, which are the one definition and also make /v1/openapi.json, so a payload the
 * document refuses does not build. test/unit/ledger-event-schemas.test.ts holds the events the decisions make to
 * the document, and test/unit/event-data-types.test.ts what the compiler refuses.
 *
 * An interface with one line per type rather than a mapped type: `EventData[T]` for a generic T (the decisions'
 * `platform<T>`) then stays an indexed access, where a mapped type makes the compiler expand FromSchema over every
 * type at once (TS2589, and minutes of checking).
 */
export interface EventData {
  'user.message': Derived<'user.message'>;
  'session.status_changed': Derived<'session.status_changed'>;
  'message.status_changed': Derived<'message.status_changed'>;
  'assistant.message_completed': Derived<'assistant.message_completed'>;
  'tool.call_requested': Derived<'tool.call_requested'>;
  'tool.call_completed': Derived<'tool.call_completed'>;
  'tool.call_failed': Derived<'tool.call_failed'>;
  'tool.result_submitted': Derived<'tool.result_submitted'>;
  'webhook.delivery_failed': Derived<'webhook.delivery_failed'>;
  'tool.confirmation_requested': Derived<'tool.confirmation_requested'>;
  'user.tool_confirmation': Derived<'user.tool_confirmation'>;
  'agent.call_started': Derived<'agent.call_started'>;
  'agent.call_completed': Derived<'agent.call_completed'>;
  'agent.call_failed': Derived<'agent.call_failed'>;
  'agent.progress': Derived<'agent.progress'>;
  'budget.threshold_reached': Derived<'budget.threshold_reached'>;
}

/** Why a delivery ended without success (docs/webhooks.md). */
export type WebhookFailureReason = EventData['webhook.delivery_failed']['reason'];

type Derived<T extends EventType> = FromSchema<(typeof EVENT_DATA_SCHEMAS)[T]>;
