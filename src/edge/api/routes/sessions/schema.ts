import type { JsonSchema } from '../../../../lib/schemas/validator.js';
import { NO_CONTROL_CHARACTERS } from '../../../../lib/schemas/common.js';
import { contentSchema, metadataSchema } from '../../../../domain/message-content.js';
import { onBusySchema } from '../../../../domain/session/on-busy.js';
import { MAX_BUDGET_USD, MIN_BUDGET_USD } from '../../../../domain/budget.js';


export const sessionFields: Record<string, JsonSchema> = {
  name: { type: ['string', 'null'], maxLength: 200, pattern: NO_CONTROL_CHARACTERS },
  storage_binding_id: { type: ['string', 'null'], maxLength: 64 },
  metadata: metadataSchema,
  secrets: {
    type: 'object',
    maxProperties: 100,
    propertyNames: { pattern: '^[A-Z_][A-Z0-9_]*$', maxLength: 128 },
    additionalProperties: { type: 'string', minLength: 1, maxLength: 65536 },
    description: 'Secret name to value; names match ^[A-Z_][A-Z0-9_]*$, values are non-empty. Never returned.',
  },
  llm_api_key: { type: 'string', minLength: 1, maxLength: 4096, description: 'Per-session provider key for model calls only; never returned.' },
  internet_access: { type: 'boolean' },
  llm_id: { type: 'string', minLength: 1, maxLength: 64, description: 'An llm_options id of the manifest; defaults to the first.' },
  budget_usd: { type: 'number', minimum: MIN_BUDGET_USD, maximum: MAX_BUDGET_USD, description: "A total spend budget in USD for the session's model calls: once spent, its next turn gets 402 budget_exceeded." },
  on_busy: { ...onBusySchema, description: 'The default `on_busy` of the session\'s user messages (those that carry none); `enqueue` when absent.' },
};

export const createSessionBody: JsonSchema = { type: 'object', additionalProperties: false, properties: sessionFields };

export const agentMessageBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'content'],
  properties: { type: { const: 'user.message' }, content: contentSchema, metadata: metadataSchema, on_busy: onBusySchema, session: createSessionBody },
};

export const userMessageEvent: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'content'],
  properties: { type: { const: 'user.message' }, content: contentSchema, metadata: metadataSchema, on_busy: onBusySchema },
};

export const toolResultEvent: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'message_id', 'tool_call_id'],
  properties: {
    type: { const: 'tool.result_submitted' },
    message_id: { type: 'string', minLength: 1, maxLength: 64 },
    tool_call_id: { type: 'string', minLength: 1, maxLength: 128 },
    result: { description: 'Raw JSON; required unless is_error is true.' },
    is_error: { type: 'boolean' },
  },
  if: { properties: { is_error: { const: true } }, required: ['is_error'] },
  else: { properties: { result: {} }, required: ['result'] },
};

/** The client's answer to a `tool.confirmation_requested` (docs/approvals.md). */
export const toolConfirmationEvent: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'message_id', 'tool_call_id', 'result'],
  properties: {
    type: { const: 'user.tool_confirmation' },
    message_id: { type: 'string', minLength: 1, maxLength: 64 },
    tool_call_id: { type: 'string', minLength: 1, maxLength: 128 },
    result: { enum: ['allow', 'deny'] },
    deny_message: { type: 'string', maxLength: 10_000, description: "With deny: the error result the model reads; a default sentence when absent." },
  },
};

/** Checked by `type` first, so an error names the field that is wrong for that type. */
export const postEventBody: JsonSchema = {
  type: 'object',
  required: ['type'],
  properties: { type: { enum: ['user.message', 'tool.result_submitted', 'user.tool_confirmation'] } },
  allOf: [
    { if: { properties: { type: { const: 'user.message' } } }, then: userMessageEvent },
    { if: { properties: { type: { const: 'tool.result_submitted' } } }, then: toolResultEvent },
    { if: { properties: { type: { const: 'user.tool_confirmation' } } }, then: toolConfirmationEvent },
  ],
};

export const syncBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['parts'],
  properties: { parts: contentSchema, metadata: metadataSchema, on_busy: onBusySchema },
};
