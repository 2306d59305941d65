import { verifyWebhook, type VerifyWebhookInput } from '../../../src/lib/webhooks/verify.js';
import type { WebhookBody } from './generated/api.js';

/**
 * Webhook signature verification for receivers. The one implementation is
 * the server's own (src/lib/webhooks), so client and server cannot disagree.
 */
export { DEFAULT_TOLERANCE_SECONDS, isValidWebhook, verifyWebhook, WebhookVerificationError, type HeaderSource, type VerificationFailure, type VerifyWebhookInput } from '../../../src/lib/webhooks/verify.js';
export { WEBHOOK_HEADERS } from '../../../src/lib/webhooks/signature.js';
export type { BatchLifecycleWebhook, SessionLifecycleWebhook, ToolCallRequestedWebhook, WebhookBodies, WebhookBody } from './generated/api.js';

/**
 * Verifies a delivery (throws WebhookVerificationError as verifyWebhook does)
 * and parses its body, typed by the document's `webhooks` section:
 *
 *   const { body } = parseWebhook({ secret, headers: req.headers, rawBody });
 *   if (body.type === 'tool.call_requested') submit(body.submit_url, body.tool_call_id);
 */
export function parseWebhook(input: VerifyWebhookInput): { id: string | null; timestamp: number; body: WebhookBody } {
  const verified = verifyWebhook(input);
  const text = typeof input.rawBody === 'string' ? input.rawBody : new TextDecoder().decode(input.rawBody);
  return { ...verified, body: JSON.parse(text) as WebhookBody };
}
