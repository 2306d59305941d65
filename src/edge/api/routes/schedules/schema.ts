import type { JsonSchema } from '../../../../lib/schemas/validator.js';
import { NO_CONTROL_CHARACTERS, nullableString } from '../../../../lib/schemas/common.js';
import { contentSchema, metadataSchema } from '../../../../domain/message-content.js';
import { sessionFields } from '../sessions/schema.js';

const cron: JsonSchema = { type: 'string', minLength: 1, maxLength: 200, description: '5 fields (minute hour day month weekday), or 6 with seconds first.' };
const timezone: JsonSchema = { type: 'string', minLength: 1, maxLength: 64, description: 'An IANA time zone; UTC by default.' };
const message: JsonSchema = { type: 'object', additionalProperties: false, required: ['content'], properties: { content: contentSchema, metadata: metadataSchema } };

/**
 * The session a tick opens: the session-creation fields without `secrets` and `llm_api_key`, which a schedule would
 * have to keep for as long as it lives (sealed or not); a session that needs them is created by the client.
 */
const { secrets: _secrets, llm_api_key: _key, ...templateFields } = sessionFields;
export const sessionTemplate: JsonSchema = { type: 'object', additionalProperties: false, properties: templateFields };

export const createScheduleBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['cron', 'message'],
  properties: { name: { type: ['string', 'null'], maxLength: 200, pattern: NO_CONTROL_CHARACTERS }, cron, timezone, message, session: sessionTemplate, paused: { type: 'boolean' } },
};

export const patchScheduleBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: { paused: { type: 'boolean' }, cron, timezone, message },
};

export const scheduleResponse: JsonSchema = {
  type: 'object',
  required: ['id', 'agent_id', 'name', 'cron', 'timezone', 'paused', 'paused_reason', 'next_run_at', 'created_at', 'message', 'session'],
  properties: {
    id: { type: 'string' },
    agent_id: { type: 'string' },
    name: nullableString,
    cron: { type: 'string' },
    timezone: { type: 'string' },
    paused: { type: 'boolean', description: 'True while it does not tick: paused through the API, or its agent was deleted.' },
    paused_reason: { type: ['string', 'null'], enum: ['user', 'agent_deleted', null], description: 'user: paused through the API; agent_deleted: its agent was deleted, and it cannot be resumed (PATCH answers 409 agent_deleted); null while it ticks.' },
    next_run_at: { ...nullableString, description: 'When the next tick is due; null while paused.' },
    created_at: { type: 'string', format: 'date-time' },
    message,
    session: sessionTemplate,
  },
};

export const scheduleRunResponse: JsonSchema = {
  type: 'object',
  required: ['scheduled_for', 'session_id', 'message_id', 'status', 'error'],
  properties: {
    scheduled_for: { type: 'string', format: 'date-time' },
    session_id: { type: 'string', description: 'The session the tick opened (absent from the sessions list when it was refused before it was stored).' },
    message_id: { type: 'string' },
    status: { type: 'string', enum: ['pending', 'sent', 'failed', 'skipped'], description: 'sent: the message was handed to its session; failed: refused (error says why); skipped: the agent was deleted.' },
    error: nullableString,
  },
};
