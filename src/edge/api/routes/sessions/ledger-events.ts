import { EVENT_DATA_SCHEMAS } from '../../../../domain/event-schemas.js';
import { EVENT_TYPES, type EventType } from '../../../../domain/ledger.js';
import type { JsonSchema } from '../../../../lib/schemas/validator.js';
import { nullableString, str, time } from '../../../../lib/schemas/common.js';

/** The message parts, also in the message views (responses.ts). */

/**
 * The ledger event as the API returns it: one schema per `type`, the envelope
 * here around the type's `data` from src/domain/event-schemas.ts (the one
 * definition, from which the session actor's EventData type is derived too;
 * docs/events.md in words). They become named components of /v1/openapi.json,
 * and the client's `LedgerEvent` union narrows on `type`.
 *
 * `tool.call_requested`'s data is the webhook body of the same name, the same
 * object: the document names that component rather than writing it twice.
 */
const DATA: Record<EventType, JsonSchema> = { ...EVENT_DATA_SCHEMAS, 'tool.call_requested': { $ref: '#/components/schemas/ToolCallRequestedWebhook' } };

/** Submitted by the client; every other type is the platform's. */
const USER_TYPES: readonly EventType[] = ['user.message', 'tool.result_submitted', 'user.tool_confirmation'];

/** `tool.call_requested` → `ToolCallRequested`: an event type as part of a component or operation name. */
export function pascalName(type: string): string {
  return type.split(/[._]/).map((w) => w[0].toUpperCase() + w.slice(1)).join('');
}

/** `user.message` → `UserMessageEvent`: the component name of a type. */
export function eventSchemaName(type: EventType): string {
  return `${pascalName(type)}Event`;
}

const eventRef = (type: EventType) => `#/components/schemas/${eventSchemaName(type)}`;

function envelope(type: EventType): JsonSchema {
  const user = USER_TYPES.includes(type);
  return {
    type: 'object',
    additionalProperties: false,
    required: ['id', 'session_id', 'sequence_number', 'type', 'message_id', 'source', 'actor', 'data', 'created_at'],
    properties: {
      id: { type: 'string', description: '`<session_id>:<sequence_number>`; also the SSE id.' },
      session_id: str,
      sequence_number: { type: 'integer', minimum: 1 },
      type: { type: 'string', const: type },
      message_id: nullableString,
      source: { type: 'string', const: user ? 'user' : 'platform' },
      actor: { type: 'object', additionalProperties: false, required: ['type', 'id'], properties: { type: { type: 'string', const: user ? 'user' : 'system' }, id: nullableString } },
      data: DATA[type],
      created_at: time,
    },
  };
}

/** Components of the document: every type's event, and `LedgerEvent`, their union discriminated by `type`. */
export const LEDGER_EVENT_SCHEMAS: Record<string, JsonSchema> = {
  LedgerEvent: {
    type: 'object',
    description: 'One ledger event; `type` says which, and fixes the shape of `data`.',
    // Without a mapping, OpenAPI reads the discriminator's value as a schema name; ours are event types.
    discriminator: { propertyName: 'type', mapping: Object.fromEntries(EVENT_TYPES.map((t) => [t, eventRef(t)])) },
    oneOf: EVENT_TYPES.map((t) => ({ $ref: eventRef(t) })),
  },
  ...Object.fromEntries(EVENT_TYPES.map((t) => [eventSchemaName(t), envelope(t)])),
};

export const ledgerEventRef: JsonSchema = { $ref: '#/components/schemas/LedgerEvent' };

/** Not a ledger event: what `?deltas=true` adds to the stream while a provider streams text, never replayed. */
export const ASSISTANT_DELTA_SCHEMAS: Record<string, JsonSchema> = {
  AssistantDelta: {
    type: 'object',
    description: 'A piece of streamed assistant text (SSE `event: assistant.delta`, no id); the full text arrives in assistant.message_completed.',
    additionalProperties: false,
    required: ['type', 'message_id', 'call_index', 'text'],
    properties: { type: { type: 'string', const: 'assistant.delta' }, message_id: str, call_index: { type: 'integer', minimum: 0 }, text: str },
  },
};

export const assistantDeltaRef: JsonSchema = { $ref: '#/components/schemas/AssistantDelta' };
