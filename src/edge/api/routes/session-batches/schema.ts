import type { JsonSchema } from '../../../../lib/schemas/validator.js';
import { sessionFields } from '../sessions/schema.js';
import { contentSchema, metadataSchema } from '../../../../domain/message-content.js';
import { nullableString, stringMap } from '../../../../lib/schemas/common.js';

/** Items per batch (spec: not shown). 10,000 is the benchmark's size and keeps a request's work bounded. */
export const MAX_BATCH_ITEMS = 10_000;

/** A batch body is larger than any other request: 10,000 items of a few hundred bytes each, with room to spare. */
export const BATCH_MAX_BODY_BYTES = 32 * 1024 * 1024;

/** One item. Checked per item: an item that fails it is returned `failed`, the others are still created. */
export const batchItemSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['agent_id', 'message'],
  properties: {
    agent_id: { type: 'string', minLength: 1, maxLength: 64, description: 'Identical across all items.' },
    version_id: { type: 'string', minLength: 1, maxLength: 64, description: 'Defaults to the agent’s active version.' },
    llm_id: sessionFields.llm_id,
    metadata: metadataSchema,
    secrets: sessionFields.secrets,
    budget_usd: sessionFields.budget_usd,
    message: { type: 'object', additionalProperties: false, required: ['content'], properties: { content: contentSchema } },
  },
};

/**
 * The envelope: the only part whose problems refuse the whole batch (400).
 * Items are any JSON here and judged one by one against `batchItemSchema`.
 */
export const createBatchBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['items'],
  properties: {
    idempotency_key: { type: 'string', minLength: 1, maxLength: 255, description: 'Per organization; a reuse returns the original batch.' },
    items: { type: 'array', minItems: 1, maxItems: MAX_BATCH_ITEMS, description: 'Each item is checked on its own; an invalid item is returned `failed`.' },
  },
};

const batchSession: JsonSchema = {
  type: 'object',
  required: ['index', 'session_id', 'status', 'last_message_status', 'agent_id', 'metadata', 'error'],
  properties: {
    index: { type: 'integer' },
    session_id: { type: ['string', 'null'], description: 'Null when the item was rejected.' },
    status: { type: 'string' },
    last_message_status: nullableString,
    agent_id: { type: 'string' },
    version_id: nullableString,
    llm_id: nullableString,
    metadata: stringMap,
    transcript_url: nullableString,
    error: nullableString,
  },
};

const batchStatus = { type: 'string', enum: ['queued', 'running', 'completed', 'failed', 'partial_failed'] };

export const createdBatchResponse: JsonSchema = {
  type: 'object',
  required: ['batch_id', 'status', 'sessions'],
  properties: { batch_id: { type: 'string' }, status: batchStatus, sessions: { type: 'array', items: batchSession } },
};

/** Child sessions by status; also in batch webhook bodies. */
export const batchCounts: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['queued', 'running', 'completed', 'failed'],
  properties: { queued: { type: 'integer' }, running: { type: 'integer' }, completed: { type: 'integer' }, failed: { type: 'integer' } },
};

/**
 * `include_sessions=false` leaves the items out: progress polling of a large
 * batch read every item each time (300 items ≈ 98 KB, ≈ 3.3 MB at the cap).
 * Without it the answer is the spec's, items included.
 */
export const batchReadQuery: JsonSchema = {
  type: 'object',
  properties: { include_sessions: { type: 'string', enum: ['true', 'false'], description: 'false: answer batch_id, status and counts only (for progress polling). Default true.' } },
};

export const batchResponse: JsonSchema = {
  type: 'object',
  required: ['batch_id', 'status', 'counts'],
  properties: {
    batch_id: { type: 'string' },
    status: batchStatus,
    counts: batchCounts,
    sessions: { type: 'array', items: batchSession, description: 'Always present unless include_sessions=false.' },
  },
};

/** For the OpenAPI document: the body as a client should send it. */
export const createBatchDocBody: JsonSchema = {
  ...createBatchBody,
  properties: { ...(createBatchBody.properties as Record<string, JsonSchema>), items: { type: 'array', minItems: 1, maxItems: MAX_BATCH_ITEMS, items: batchItemSchema } },
};
