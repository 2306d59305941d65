import type { JsonSchema } from '../../../../lib/schemas/validator.js';
import { WEBHOOK_EVENT_TYPES } from '../../../../domain/views/webhook-config.js';
import { nullableString } from '../../../../lib/schemas/common.js';

export const putWebhookBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['webhook_url'],
  properties: {
    webhook_url: { type: 'string', minLength: 1, maxLength: 2048, description: 'Absolute HTTPS URL without credentials that resolves only to public addresses.' },
    event_types: {
      type: 'array',
      maxItems: 32,
      items: { type: 'string', enum: [...WEBHOOK_EVENT_TYPES] },
      description: 'Subscribed event types; defaults to ["tool.call_requested"]. Duplicates are removed.',
    },
  },
};

export const webhookConfigResponse: JsonSchema = {
  type: 'object',
  required: ['webhook_url', 'signing_enabled', 'event_types'],
  properties: {
    webhook_url: nullableString,
    signing_enabled: { type: 'boolean' },
    event_types: { type: 'array', items: { type: 'string', enum: [...WEBHOOK_EVENT_TYPES] } },
    signing_secret: { type: 'string', description: 'Returned only when the secret is created or rotated; store it at once.' },
    disabled_at: { type: 'string', format: 'date-time', description: 'Present only while deliveries are stopped by a 410 Gone answer; a PUT re-enables.' },
  },
};
