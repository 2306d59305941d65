import { EVENT_TYPES, MESSAGE_STATUSES, SESSION_STATUSES, type EventType } from '../../../../domain/ledger.js';
import type { JsonSchema } from '../../../../lib/schemas/validator.js';
import { contentSchema, metadataSchema } from './schema.js';
import { anyObject, nullableString, str, time } from '../../../../lib/schemas/common.js';

/**
 * The ledger event as the API returns it: one schema per `type`, each with
 * its exact `data` (docs/events.md in words; the session actor's decisions,
 * actors/session/, write them). They become named components of
 * /v1/openapi.json, and the client's `LedgerEvent` union narrows on `type`.
 */

export const textPart: JsonSchema = { type: 'object', additionalProperties: false, required: ['type', 'text'], properties: { type: { type: 'string', const: 'text' }, text: str } };
export const toolCallPart: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'id', 'name', 'arguments'],
  properties: { type: { type: 'string', const: 'tool_call' }, id: str, name: str, arguments: anyObject },
};

function data(required: string[], properties: Record<string, JsonSchema>, optional: Record<string, JsonSchema> = {}): JsonSchema {
  return { type: 'object', additionalProperties: false, required, properties: { ...properties, ...optional } };
}

const call = { message_id: str, tool_call_id: str, tool_name: str };

/** Each type's `data`. */
const DATA: Record<EventType, JsonSchema> = {
  'user.message': data(['content', 'metadata', 'message_id'], { content: contentSchema, metadata: { oneOf: [metadataSchema, { type: 'null' }] }, message_id: str }),
  'session.status_changed': data(['from', 'to'], { from: { type: 'string', enum: [...SESSION_STATUSES] }, to: { type: 'string', enum: [...SESSION_STATUSES] } }),
  'message.status_changed': data(
    ['message_id', 'from', 'to', 'attempt'],
    { message_id: str, from: { type: ['string', 'null'], enum: [...MESSAGE_STATUSES, null], description: 'Null for a new message.' }, to: { type: 'string', enum: [...MESSAGE_STATUSES] }, attempt: { type: 'integer', minimum: 1 } },
    {
      error: { type: 'string', description: 'Why, when `to` is `failed`, or the retryable failure on a retry.' },
      retry_in_ms: { type: 'integer', minimum: 0, description: 'On a retry (`from` and `to` both `running`, `attempt` the new one): the backoff before it.' },
    },
  ),
  'assistant.message_completed': data(['message_id', 'call_index', 'parts', 'stop_reason', 'usage', 'final'], {
    message_id: str,
    call_index: { type: 'integer', minimum: 0, description: '0 for the first model call of the message, then 1, 2, ...' },
    parts: { type: 'array', items: { oneOf: [textPart, toolCallPart] } },
    stop_reason: { type: 'string', enum: ['end_turn', 'tool_use', 'max_tokens', 'stop_sequence', 'refusal'] },
    usage: { oneOf: [data(['input_tokens', 'output_tokens'], { input_tokens: { type: 'integer' }, output_tokens: { type: 'integer' } }), { type: 'null' }] },
    final: { type: 'boolean', description: 'True when the response has no tool calls: the message then completes.' },
  }),
  // Exactly the webhook body, so the component is shared.
  'tool.call_requested': { $ref: '#/components/schemas/ToolCallRequestedWebhook' },
  'tool.call_completed': data(['message_id', 'tool_call_id', 'tool_name', 'kind'], { ...call, kind: { type: 'string', const: 'custom' } }, { output: { description: "The handler's return value (JSON); absent when it returned nothing." } }),
  'tool.call_failed': data(['message_id', 'tool_call_id', 'tool_name', 'kind', 'reason', 'error'], {
    ...call,
    kind: { type: ['string', 'null'], enum: ['custom', 'external', null], description: 'Null for a tool the agent does not have.' },
    reason: { type: 'string', enum: ['timeout', 'error', 'unknown_tool', 'cancelled'] },
    error: str,
  }),
  'tool.result_submitted': data(['message_id', 'tool_call_id', 'result', 'is_error'], { message_id: str, tool_call_id: str, result: { description: 'The submitted JSON; null when none was sent with is_error true.' }, is_error: { type: 'boolean' } }),
  'webhook.delivery_failed': data(['delivery_id', 'webhook_id', 'event_type', 'url', 'attempts', 'last_error', 'reason'], {
    delivery_id: str,
    webhook_id: { type: 'string', description: 'The delivery body `id`.' },
    event_type: str,
    url: str,
    attempts: { type: 'integer', minimum: 0 },
    last_error: str,
    reason: {
      type: 'string',
      enum: ['retries_exhausted', 'gone', 'disabled', 'expired', 'config_deleted', 'unsubscribed'],
      description: 'retries_exhausted: the schedule ran out; gone: the receiver answered 410 (the webhook is now disabled); disabled: the webhook was disabled while a retry was pending; expired: a tool.call_requested past its expires_at is not retried; config_deleted / unsubscribed: the webhook was removed, or no longer takes the type, while a retry was pending.',
    },
  }),
};

/** Submitted by the client; every other type is the platform's. */
const USER_TYPES: readonly EventType[] = ['user.message', 'tool.result_submitted'];

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
      actor: data(['type', 'id'], { type: { type: 'string', const: user ? 'user' : 'system' }, id: nullableString }),
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
