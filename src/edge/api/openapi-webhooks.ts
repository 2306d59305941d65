import type { JsonSchema } from '../../lib/schemas/validator.js';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../../domain/views/webhook-config.js';
import { WEBHOOK_HEADERS } from '../../lib/webhooks/signature.js';
import { pascalName } from './routes/sessions/ledger-events.js';
import { batchLifecycleWebhook, budgetThresholdWebhook, sessionLifecycleWebhook, toolCallRequestedWebhook, toolConfirmationRequestedWebhook } from './routes/webhook-config/webhook-bodies.js';

/**
 * The deliveries Troupe makes to an agent's webhook, as OpenAPI 3.1's
 * top-level `webhooks`: one entry per event type a webhook can subscribe to,
 * each naming its body component. The client's `WebhookBody` is generated
 * from this section.
 */
export const WEBHOOK_BODY_SCHEMAS: Record<string, JsonSchema> = {
  ToolCallRequestedWebhook: toolCallRequestedWebhook,
  SessionLifecycleWebhook: sessionLifecycleWebhook,
  BatchLifecycleWebhook: batchLifecycleWebhook,
  ToolConfirmationRequestedWebhook: toolConfirmationRequestedWebhook,
  BudgetThresholdWebhook: budgetThresholdWebhook,
};

const BODY_OF: Record<WebhookEventType, string> = {
  'tool.call_requested': 'ToolCallRequestedWebhook',
  'session.completed': 'SessionLifecycleWebhook',
  'session.failed': 'SessionLifecycleWebhook',
  'batch.completed': 'BatchLifecycleWebhook',
  'batch.failed': 'BatchLifecycleWebhook',
  'batch.partial_failed': 'BatchLifecycleWebhook',
  'tool.confirmation_requested': 'ToolConfirmationRequestedWebhook',
  'budget.threshold_reached': 'BudgetThresholdWebhook',
};

const SUMMARY: Record<WebhookEventType, string> = {
  'tool.call_requested': 'The model called an external tool; submit its result to submit_url.',
  'session.completed': 'A message of the session completed.',
  'session.failed': 'A message of the session failed.',
  'batch.completed': 'Every session of the batch completed.',
  'batch.failed': 'Every session of the batch failed.',
  'batch.partial_failed': 'The batch ended with some sessions failed.',
  'tool.confirmation_requested': 'The model called an always_ask tool; answer with a user.tool_confirmation event at submit_url.',
  'budget.threshold_reached': "The organization's or a key's spend budget reached 80% or 100% (once each per period).",
};

const HEADERS = [
  { name: 'User-Agent', description: '`Service-Webhook/1.0`.' },
  { name: WEBHOOK_HEADERS.id, description: 'The body `id`, for logs and routing. It is not signed: deduplicate on the signed body\u2019s `id` (which verifyWebhook returns), never on this header.' },
  { name: WEBHOOK_HEADERS.timestamp, description: 'Unix time in seconds of this attempt; reject old ones.' },
  { name: WEBHOOK_HEADERS.signature, description: '`v1=<hex HMAC-SHA256 of "<timestamp>.<raw body>">`, one per active secret; verify with the client\u2019s verifyWebhook.' },
].map((h) => ({ ...h, in: 'header', required: true, schema: { type: 'string' } }));

export function webhooksSection(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const type of WEBHOOK_EVENT_TYPES) {
    out[type] = {
      post: {
        summary: SUMMARY[type],
        operationId: `webhook${pascalName(type)}`,
        tags: ['webhooks'],
        parameters: HEADERS,
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: `#/components/schemas/${BODY_OF[type]}` } } } },
        responses: {
          '200': { description: 'Any 2xx acknowledges the delivery; answer within 15 s and do the work afterwards.' },
          '410': { description: 'Gone: the webhook is disabled and nothing more is sent to it until the next PUT.' },
        },
        security: [],
      },
    };
  }
  return out;
}
