import type { JsonSchema } from '../../../../lib/schemas/validator.js';
import { ledgerEventRef } from './ledger-events.js';
import { textPart, toolCallPart } from '../../../../domain/event-schemas.js';
import { anyObject, nullableString, nullableTime, stringMap, time } from '../../../../lib/schemas/common.js';
import { listResponse } from '../../pagination.js';
import { ON_BUSY } from '../../../../domain/session/on-busy.js';

/**
 * Response shapes of the session routes, for /v1/openapi.json and the typed
 * client generated from it (clients/typescript). They describe what
 * sessionView and messageView return; ledger events are in ledger-events.ts.
 */

export const sessionResponse: JsonSchema = {
  type: 'object',
  required: ['id', 'name', 'agent_id', 'version_id', 'llm_id', 'status', 'last_message_id', 'last_message_status', 'created_at', 'metadata', 'on_busy', 'budget_usd'],
  properties: {
    id: { type: 'string' },
    name: nullableString,
    agent_id: { type: 'string' },
    version_id: { type: 'string' },
    storage_binding_id: nullableString,
    llm_id: { type: 'string' },
    internet_access: { type: 'boolean' },
    status: { type: 'string', enum: ['idle', 'running'] },
    last_message_id: nullableString,
    last_message_status: nullableString,
    created_at: time,
    metadata: stringMap,
    on_busy: { type: 'string', enum: [...ON_BUSY], description: 'What a user message without its own `on_busy` does while the session is busy: the default set at creation, `enqueue` when none was.' },
    budget_usd: { type: ['number', 'null'], description: "The session's total spend budget in USD, set at creation (`budget_usd`); null when it has none. Its spend is in GET /v1/sessions/{session_id}/usage." },
  },
};

export const sessionListResponse: JsonSchema = listResponse('sessions', sessionResponse);

export const eventListResponse: JsonSchema = listResponse('events', ledgerEventRef);

const outputPart: JsonSchema = {
  oneOf: [
    textPart,
    toolCallPart,
    {
      type: 'object',
      required: ['type', 'tool_call_id', 'tool_name', 'content', 'is_error'],
      properties: {
        type: { const: 'tool_result' },
        tool_call_id: { type: 'string' },
        tool_name: { type: 'string' },
        content: { type: 'array', items: { type: 'object', required: ['type', 'text'], properties: { type: { const: 'text' }, text: { type: 'string' } } } },
        is_error: { type: 'boolean' },
      },
    },
  ],
};

export const messageResponse: JsonSchema = {
  type: 'object',
  required: ['id', 'session_id', 'sequence_number', 'parts', 'metadata', 'status', 'attempt', 'output', 'error', 'created_at', 'completed_at'],
  properties: {
    id: { type: 'string' },
    session_id: { type: 'string' },
    sequence_number: { type: 'integer' },
    parts: { type: 'array', items: { type: 'object', required: ['type'], properties: { type: { type: 'string', enum: ['text', 'file', 'image'] }, text: { type: 'string' }, file_id: { type: 'string' } } } },
    metadata: { type: ['object', 'null'], additionalProperties: { type: 'string' } },
    status: { type: 'string', enum: ['queued', 'running', 'requires_action', 'completed', 'failed', 'cancelled'] },
    attempt: { type: 'integer' },
    output: { type: 'object', required: ['parts'], properties: { parts: { type: 'array', items: outputPart } } },
    error: nullableString,
    created_at: time,
    completed_at: nullableTime,
  },
};

export const messageListResponse: JsonSchema = listResponse('messages', messageResponse);

/** What appending a command answers: the first event it wrote, the message it concerns, the session after it. */
export const turnReplyResponse: JsonSchema = {
  type: 'object',
  required: ['event', 'message', 'session'],
  properties: {
    event: { oneOf: [ledgerEventRef, { type: 'null' }] },
    message: { oneOf: [{ type: 'object', required: ['id', 'status'], properties: { id: { type: 'string' }, status: { type: 'string' } } }, { type: 'null' }] },
    session: sessionResponse,
  },
};

export const toolCallListResponse: JsonSchema = {
  type: 'object',
  required: ['tool_calls'],
  properties: {
    tool_calls: {
      type: 'array',
      items: {
        type: 'object',
        required: ['message_id', 'tool_call_id', 'tool_name', 'kind', 'arguments', 'input_schema', 'output_schema', 'status', 'expires_at', 'awaiting_confirmation'],
        properties: {
          message_id: { type: 'string' },
          tool_call_id: { type: 'string' },
          tool_name: { type: 'string' },
          kind: { type: ['string', 'null'], enum: ['custom', 'external', null] },
          arguments: anyObject,
          input_schema: { type: ['object', 'null'], additionalProperties: {}, description: "The tool's input JSON Schema, null when it declares none." },
          output_schema: { type: ['object', 'null'], additionalProperties: {}, description: "The tool's output JSON Schema (a result is checked against it), null when it declares none." },
          status: { const: 'pending' },
          expires_at: nullableTime,
          awaiting_confirmation: { type: 'boolean', description: 'True while an `always_ask` call waits for a `user.tool_confirmation` (docs/approvals.md); `expires_at` is then the confirmation\'s.' },
        },
      },
    },
  },
};
