/**
 * Webhook signature verification for receivers. The one implementation is
 * the server's own (src/webhooks), so client and server cannot disagree.
 */
export { DEFAULT_TOLERANCE_SECONDS, isValidWebhook, verifyWebhook, WebhookVerificationError, type HeaderSource, type VerificationFailure, type VerifyWebhookInput } from '../../../src/webhooks/verify.js';
export { WEBHOOK_HEADERS } from '../../../src/webhooks/signature.js';
