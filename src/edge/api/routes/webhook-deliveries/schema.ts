import type { JsonSchema } from '../../../../lib/schemas/validator.js';
import { nullableString, nullableTime, time } from '../../../../lib/schemas/common.js';
import { listResponse } from '../../pagination.js';


export const deliveryResponse: JsonSchema = {
  type: 'object',
  required: ['id', 'event_id', 'event_type', 'status', 'attempts', 'last_status_code', 'last_error', 'created_at', 'updated_at'],
  properties: {
    id: { type: 'string', description: 'Delivery id (`whd_...`).' },
    event_id: { type: 'string', description: 'The webhook id: the body `id` and `Service-Webhook-Id`, the same on every attempt.' },
    event_type: { type: 'string' },
    status: { type: 'string', enum: ['pending', 'succeeded', 'failed', 'disabled'] },
    attempts: { type: 'integer', description: 'Attempts made so far, redeliveries included.' },
    last_status_code: { type: ['integer', 'null'], description: 'HTTP status of the last attempt; null when it got no answer.' },
    last_error: nullableString,
    session_id: nullableString,
    batch_id: nullableString,
    created_at: time,
    updated_at: time,
    last_attempt_at: nullableTime,
    next_attempt_at: { ...nullableTime, description: 'When the next scheduled retry is due; null when none is.' },
    completed_at: nullableTime,
    attempt_log: {
      type: 'array',
      description: 'Single-delivery reads only: the latest 100 attempts, oldest first (`attempts` counts them all).',
      items: {
        type: 'object',
        properties: {
          number: { type: 'integer' },
          attempted_at: time,
          status_code: { type: ['integer', 'null'] },
          error: nullableString,
          duration_ms: { type: 'integer' },
          redelivery: { type: 'boolean' },
        },
      },
    },
  },
};

export const deliveryListResponse: JsonSchema = listResponse('deliveries', deliveryResponse);
