import { MESSAGE_STATUSES, SESSION_STATUSES } from '../../../../domain/ledger.js';
import type { JsonSchema } from '../../../../lib/schemas/validator.js';
import { batchCounts } from '../session-batches/schema.js';
import { nullableString, stringMap, time } from '../../../../lib/schemas/common.js';
import { budgetThresholdData, EVENT_DATA_SCHEMAS, toolCallRequestedData } from '../../../../domain/event-schemas.js';

/**
 * The bodies Troupe POSTs to an agent's webhook (spec: Webhook deliveries),
 * for the `webhooks` section of /v1/openapi.json and the client's
 * `WebhookBody` type. actors/webhook/decide.ts (buildBody) writes them; the
 * shapes are ours, so no field is left open.
 */

/** Also the `data` of the `tool.call_requested` ledger event, so it is defined with the events' (src/domain/event-schemas.ts). */
export const toolCallRequestedWebhook: JsonSchema = toolCallRequestedData;

/** The `tool.confirmation_requested` event's data, with the envelope fields tool.call_requested's body has and where to answer. */
const confirmationData = EVENT_DATA_SCHEMAS['tool.confirmation_requested'];
export const toolConfirmationRequestedWebhook: JsonSchema = {
  type: 'object',
  description: 'An `always_ask` tool call waiting for the client: POST a `user.tool_confirmation` event (allow or deny) to `submit_url` before `expires_at`.',
  additionalProperties: false,
  required: ['id', 'type', 'session_id', 'submit_url', ...confirmationData.required],
  properties: {
    id: { type: 'string', description: '`<session_id>:<message_id>:<tool_call_id>:confirmation`; the same on every retry: the idempotency key.' },
    type: { type: 'string', const: 'tool.confirmation_requested' },
    session_id: { type: 'string' },
    ...confirmationData.properties,
    submit_url: { type: 'string', description: 'The session events endpoint.' },
  },
};

/** A lifecycle body: `{id, type, created_at, data}`, the same on every retry; `data` is the body's own. */
function lifecycleBody(description: string, id: string, types: string[], required: string[], data: Record<string, JsonSchema>): JsonSchema {
  return {
    type: 'object',
    description,
    additionalProperties: false,
    required: ['id', 'type', 'created_at', 'data'],
    properties: {
      id: { type: 'string', description: `${id}; the same on every retry.` },
      type: { type: 'string', enum: types },
      created_at: time,
      data: { type: 'object', additionalProperties: false, required, properties: data },
    },
  };
}

export const sessionLifecycleWebhook: JsonSchema = lifecycleBody(
  'A message of the session ended (completed or failed); `data` is the session as that turn left it. Call GET /v1/sessions/{session_id} for the state now.',
  '`<session_id>:<message_id>:<type>`',
  ['session.completed', 'session.failed'],
  ['session_id', 'batch_id', 'agent_id', 'version_id', 'llm_id', 'status', 'last_message_status', 'metadata'],
  {
    session_id: { type: 'string' },
    batch_id: nullableString,
    agent_id: { type: 'string' },
    version_id: { type: 'string' },
    llm_id: { type: 'string' },
    status: { type: 'string', enum: [...SESSION_STATUSES] },
    last_message_status: { type: ['string', 'null'], enum: [...MESSAGE_STATUSES, null] },
    metadata: { ...stringMap, description: 'The session metadata given at creation.' },
  },
);

export const budgetThresholdWebhook: JsonSchema = {
  type: 'object',
  description: "An organization's or a key's spend budget reached 80% or 100% of its amount, once each per period (docs/budgets.md); sent to every agent webhook of the organization that takes the type.",
  additionalProperties: false,
  required: ['id', 'type', 'created_at', 'data'],
  properties: {
    id: { type: 'string', description: '`budget:<scope>:<id>:<period>:<threshold>`; the same on every retry.' },
    type: { type: 'string', enum: ['budget.threshold_reached'] },
    created_at: time,
    data: budgetThresholdData as unknown as JsonSchema,
  },
};

export const batchLifecycleWebhook: JsonSchema = lifecycleBody(
  'A batch reached a terminal status; sent once. Call GET /v1/session-batches/{batch_id} for its sessions.',
  '`<batch_id>:<type>`',
  ['batch.completed', 'batch.failed', 'batch.partial_failed'],
  ['batch_id', 'agent_id', 'status', 'counts'],
  {
    batch_id: { type: 'string' },
    agent_id: { type: 'string' },
    status: { type: 'string', enum: ['completed', 'failed', 'partial_failed'] },
    counts: { oneOf: [batchCounts, { type: 'null' }], description: 'Child sessions by status when the batch became terminal, as GET /v1/session-batches/{batch_id} answered then; null if the batch could not be read.' },
  },
);
