import { createHmac } from 'node:crypto';

/**
 * The webhook signature scheme (spec: Authentication 5): HMAC-SHA256, keyed
 * with the signing secret, over `<timestamp>.<raw body>`, hex-encoded and sent
 * as `v1=<hex>`. Depends on node:crypto only, so a receiver can copy it.
 */
export const SIGNATURE_SCHEME = 'v1';

export const WEBHOOK_HEADERS = Object.freeze({
  id: 'Service-Webhook-Id',
  timestamp: 'Service-Webhook-Timestamp',
  signature: 'Service-Webhook-Signature',
} as const);

export function signWebhook(secret: string, timestamp: string | number, rawBody: string | Uint8Array): string {
  const mac = createHmac('sha256', secret);
  mac.update(`${timestamp}.`);
  mac.update(rawBody);
  return mac.digest('hex');
}

/** One `v1=` value per secret, space-separated: both during the hour after a rotation. */
export function signatureHeader(secrets: readonly string[], timestamp: string | number, rawBody: string | Uint8Array): string {
  return secrets.map((s) => `${SIGNATURE_SCHEME}=${signWebhook(s, timestamp, rawBody)}`).join(' ');
}
