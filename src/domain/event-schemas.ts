import type { JSONSchema } from 'json-schema-to-ts';
import { contentSchema, metadataSchema } from './message-content.js';
import { MESSAGE_STATUSES, SESSION_STATUSES, type EventType } from './ledger.js';

/**
 * What each ledger event type carries in `data`: the one definition. It is plain JSON Schema data `as const`, and
 * every other view of it is derived: the `EventData` type the session actor appends (event-data.ts, by FromSchema),
 * the per-type components of /v1/openapi.json (src/edge/api/routes/sessions/ledger-events.ts wraps each in the
 * event envelope), and through that document the generated client's `LedgerEvent`. So a field added here reaches the
 * compiler, the document and the client at once. docs/events.md says the same in words.
 */

// The small schemas the data is made of. src/lib/schemas/common.ts has the same for the edge; the domain cannot import it.
const str = { type: 'string' } as const;
const time = { type: 'string', format: 'date-time' } as const;
/** Any JSON object: what the model or the agent chose to send. */
const anyObject = { type: 'object', additionalProperties: {} } as const;

/** An object with exactly these properties; those in `required` must be present. The literals are kept for FromSchema. */
function data<const R extends readonly string[], const P extends Record<string, object>>(required: R, properties: P) {
  return { type: 'object', additionalProperties: false, required, properties } as const;
}

/** An assistant's text, in `assistant.message_completed` and the message's output. */
export const textPart = { type: 'object', additionalProperties: false, required: ['type', 'text'], properties: { type: { type: 'string', const: 'text' }, text: str } } as const;
/** A tool call the model made. */
export const toolCallPart = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'id', 'name', 'arguments'],
  properties: { type: { type: 'string', const: 'tool_call' }, id: str, name: str, arguments: anyObject },
} as const;

/**
 * The `tool.call_requested` data, and also the body of the webhook of the same name (the document's
 * `ToolCallRequestedWebhook`, src/edge/api/routes/webhook-config/webhook-bodies.ts): the same object, byte for byte.
 */
export const toolCallRequestedData = {
  type: 'object',
  description: 'An external tool call waiting for its result: POST it to `submit_url` as a `tool.result_submitted` event before `expires_at`.',
  additionalProperties: false,
  required: ['id', 'type', 'session_id', 'message_id', 'tool_call_id', 'tool_name', 'arguments', 'input_schema', 'output_schema', 'expires_at', 'submit_url'],
  properties: {
    id: { type: 'string', description: '`<session_id>:<message_id>:<tool_call_id>`; the same on every retry: the idempotency key.' },
    type: { type: 'string', const: 'tool.call_requested' },
    session_id: { type: 'string' },
    message_id: { type: 'string' },
    tool_call_id: { type: 'string' },
    tool_name: { type: 'string' },
    arguments: anyObject,
    input_schema: { ...anyObject, description: "The tool's input JSON Schema; `{}` when it declares none." },
    output_schema: { ...anyObject, description: "The tool's output JSON Schema, which a result is checked against; `{}` when it declares none." },
    expires_at: time,
    submit_url: { type: 'string', description: 'The session events endpoint.' },
  },
} as const;

const call = { message_id: str, tool_call_id: str, tool_name: str } as const;

/** A code agent's `ctx` call (docs/code-agents.md): its place in the message's journal, counted from 0. */
const position = { type: 'integer', minimum: 0, description: "The call's place in the message's journal: the run's ctx calls counted from 0." } as const;
/**
 * A budget passed 80% or 100% of its amount (once each per period): in the session's ledger for a session budget,
 * and the body of the webhook of the same name for every budget (docs/budgets.md).
 */
export const budgetThresholdData = data(['scope', 'id', 'threshold', 'amount_usd', 'period', 'spent_usd', 'resets_at'], {
  scope: { type: 'string', enum: ['org', 'api_key', 'routing_key', 'session'] },
  id: { type: 'string', description: 'The org, key or session id.' },
  threshold: { type: 'integer', enum: [80, 100], description: 'Percent of the amount reached.' },
  amount_usd: { type: 'number' },
  period: { type: 'string', enum: ['day', 'month', 'total'] },
  spent_usd: { type: 'number', description: 'Spent in the period when the threshold was crossed.' },
  resets_at: { type: ['string', 'null'], format: 'date-time', description: 'When the period ends (UTC); null for a total budget.' },
});

/** Each event type's `data`. `satisfies`: a type of EVENT_TYPES without its schema, or a schema of no type, does not build. */
export const EVENT_DATA_SCHEMAS = {
  'user.message': data(['content', 'metadata', 'message_id'], { content: contentSchema, metadata: { oneOf: [metadataSchema, { type: 'null' }] }, message_id: str }),
  'session.status_changed': data(['from', 'to'], { from: { type: 'string', enum: [...SESSION_STATUSES] }, to: { type: 'string', enum: [...SESSION_STATUSES] } }),
  'message.status_changed': data(['message_id', 'from', 'to', 'attempt'], {
    message_id: str,
    from: { type: ['string', 'null'], enum: [...MESSAGE_STATUSES, null], description: 'Null for a new message.' },
    to: { type: 'string', enum: [...MESSAGE_STATUSES] },
    attempt: { type: 'integer', minimum: 1 },
    error: { type: 'string', description: 'Why, when `to` is `failed`, or the retryable failure on a retry.' },
    retry_in_ms: { type: 'integer', minimum: 0, description: 'On a retry (`from` and `to` both `running`, `attempt` the new one): the backoff before it.' },
    interrupted_by: { type: 'string', description: 'When `to` is `cancelled` because a user message sent with `on_busy` `interrupt` or `rollback` took its place: that message.' },
    error_code: { type: 'string', description: 'With `error`, when the failure has a code: `budget_exceeded` when a budget refused the turn.' },
    on_busy: { type: 'string', enum: ['interrupt', 'rollback'], description: "With `interrupted_by`: the policy. After `rollback` the cancelled turn is left out of the model's history." },
  }),
  'assistant.message_completed': data(['message_id', 'call_index', 'parts', 'stop_reason', 'usage', 'final'], {
    message_id: str,
    call_index: { type: 'integer', minimum: 0, description: '0 for the first model call of the message, then 1, 2, ...' },
    parts: { type: 'array', items: { oneOf: [textPart, toolCallPart] } },
    stop_reason: { type: 'string', enum: ['end_turn', 'tool_use', 'max_tokens', 'stop_sequence', 'refusal'] },
    usage: { oneOf: [data(['input_tokens', 'output_tokens'], { input_tokens: { type: 'integer' }, output_tokens: { type: 'integer' } }), { type: 'null' }] },
    final: { type: 'boolean', description: 'True when the response has no tool calls: the message then completes.' },
  }),
  'tool.call_requested': toolCallRequestedData,
  'tool.call_completed': data(['message_id', 'tool_call_id', 'tool_name', 'kind'], { ...call, kind: { type: 'string', const: 'custom' }, output: { description: "The handler's return value (JSON); absent when it returned nothing." } }),
  'tool.call_failed': data(['message_id', 'tool_call_id', 'tool_name', 'kind', 'reason', 'error'], {
    ...call,
    kind: { type: ['string', 'null'], enum: ['custom', 'external', null], description: 'Null for a tool the agent does not have.' },
    reason: { type: 'string', enum: ['timeout', 'error', 'unknown_tool', 'cancelled', 'denied'], description: '`denied`: the client answered a `tool.confirmation_requested` with deny (`error` is its deny_message); `timeout` also ends a confirmation nobody gave in time.' },
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
      description:
        'retries_exhausted: the schedule ran out; gone: the receiver answered 410 (the webhook is now disabled); disabled: the webhook was disabled while a retry was pending; expired: a tool.call_requested past its expires_at is not retried; config_deleted / unsubscribed: the webhook was removed, or no longer takes the type, while a retry was pending.',
    },
  }),
  'tool.confirmation_requested': data(['message_id', 'tool_call_id', 'tool_name', 'arguments', 'expires_at'], {
    ...call,
    arguments: anyObject,
    expires_at: { ...time, description: 'Unanswered by then, the call fails with reason `timeout` and the model is told.' },
  }),
  'user.tool_confirmation': data(['message_id', 'tool_call_id', 'result'], {
    message_id: str,
    tool_call_id: str,
    result: { type: 'string', enum: ['allow', 'deny'] },
    deny_message: { type: 'string', description: 'With deny: what the model is told as the error result.' },
  }),
  'agent.call_started': data(['message_id', 'position', 'kind', 'name', 'arguments'], {
    message_id: str,
    position,
    kind: { type: 'string', enum: ['model', 'tool', 'sleep'] },
    name: { type: 'string', description: 'The llm_id (`default`: the session\'s), the tool name, or `sleep`.' },
    arguments: { ...anyObject, description: 'What the run passed: the model request, the tool arguments, or `{ms}`.' },
    tool_call_id: { type: 'string', description: 'Tools: `ctx_<position>`, the id its tool.* events carry.' },
    until: { ...time, description: 'Sleeps: when it ends.' },
    attempt: { type: 'integer', minimum: 2, description: 'Models: a retry of the call at this position after a retryable failure (the first try has none).' },
    error: { type: 'string', description: 'With attempt: why the previous try failed.' },
    retry_in_ms: { type: 'integer', minimum: 0, description: 'With attempt: the backoff before this try.' },
  }),
  'agent.call_completed': data(['message_id', 'position', 'kind'], {
    message_id: str,
    position,
    kind: { type: 'string', enum: ['model', 'sleep'] },
    output: { description: 'Models: `{text, parts, stop_reason, usage}`; sleeps: null.' },
  }),
  'agent.call_failed': data(['message_id', 'position', 'kind', 'error'], { message_id: str, position, kind: { type: 'string', enum: ['model', 'sleep'] }, error: str }),
  'agent.progress': data(['message_id', 'position', 'text'], { message_id: str, position, text: str }),
  'budget.threshold_reached': budgetThresholdData,
} as const satisfies Record<EventType, JSONSchema>;
