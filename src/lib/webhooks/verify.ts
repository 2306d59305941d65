import { timingSafeEqual } from 'node:crypto';
import { SIGNATURE_SCHEME, WEBHOOK_HEADERS, signWebhook } from './signature.js';

/**
 * Receiver-side verification of Troupe webhook deliveries. Import it, or copy
 * this file and signature.ts: they need nothing but node:crypto.
 *
 *   const { id } = verifyWebhook({ secret, headers: req.headers, rawBody });
 *
 * Pass the body exactly as received (bytes or string), before any JSON
 * parsing: re-serialised JSON does not match the signature.
 */

/** Node's IncomingHttpHeaders, a Fetch `Headers`, or any header map (names in any case). */
export type HeaderSource = { get(name: string): string | null } | Record<string, string | string[] | undefined>;

export interface VerifyWebhookInput {
  /** The signing secret; during a rotation pass both the new and the old one. */
  secret: string | readonly string[];
  headers: HeaderSource;
  rawBody: string | Uint8Array;
  /** Oldest (and furthest in the future) timestamp accepted, in seconds. */
  toleranceSeconds?: number;
  /** Current time in milliseconds; for tests. */
  now?: number;
}

export type VerificationFailure = 'missing_header' | 'invalid_timestamp' | 'timestamp_out_of_tolerance' | 'invalid_signature';

export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
  constructor(
    readonly reason: VerificationFailure,
    message: string,
  ) {
    super(message);
  }
}

export const DEFAULT_TOLERANCE_SECONDS = 300;

function header(headers: HeaderSource, name: string): string | null {
  if (typeof (headers as { get?: unknown }).get === 'function') return (headers as { get(n: string): string | null }).get(name);
  const wanted = name.toLowerCase();
  for (const [k, v] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (k.toLowerCase() === wanted && v !== undefined) return Array.isArray(v) ? v.join(' ') : v;
  }
  return null;
}

/** The `v1=` values of a signature header; other schemes are ignored, so new ones can be added alongside. */
function v1Signatures(value: string): Buffer[] {
  const prefix = `${SIGNATURE_SCHEME}=`;
  return value
    .split(/[\s,]+/)
    .filter((part) => part.startsWith(prefix) && /^[0-9a-f]{64}$/i.test(part.slice(prefix.length)))
    .map((part) => Buffer.from(part.slice(prefix.length), 'hex'));
}

/**
 * The signed body's `id`: the key to deduplicate on. The `Service-Webhook-Id`
 * header carries the same value but is not signed, so a captured delivery
 * replayed within the tolerance with another id in that header would pass
 * for a new event if receivers keyed on it.
 */
function bodyId(rawBody: string | Uint8Array): string | null {
  try {
    const body: unknown = JSON.parse(typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody));
    const id = body && typeof body === 'object' ? (body as { id?: unknown }).id : undefined;
    return typeof id === 'string' && id !== '' ? id : null;
  } catch {
    return null;
  }
}

/**
 * Checks the timestamp is within the tolerance and that some `v1=` signature
 * matches some secret, comparing in constant time. Returns the webhook id
 * (the idempotency key: the signed body's `id`, never the unsigned header's)
 * and the timestamp; throws WebhookVerificationError otherwise.
 */
export function verifyWebhook(input: VerifyWebhookInput): { id: string | null; timestamp: number } {
  const tolerance = input.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const ts = header(input.headers, WEBHOOK_HEADERS.timestamp);
  const sig = header(input.headers, WEBHOOK_HEADERS.signature);
  if (ts === null || sig === null) throw new WebhookVerificationError('missing_header', 'The timestamp or signature header is missing.');
  if (!/^\d{1,12}$/.test(ts.trim())) throw new WebhookVerificationError('invalid_timestamp', 'The timestamp header is not Unix seconds.');
  const timestamp = Number(ts.trim());
  const nowSeconds = Math.floor((input.now ?? Date.now()) / 1000);
  if (Math.abs(nowSeconds - timestamp) > tolerance) {
    throw new WebhookVerificationError('timestamp_out_of_tolerance', `The timestamp is more than ${tolerance} s away from now.`);
  }
  const secrets = typeof input.secret === 'string' ? [input.secret] : input.secret;
  const given = v1Signatures(sig);
  let matched = false;
  // Every pair is compared, with no early exit, so timing says nothing about which one matched.
  for (const secret of secrets) {
    const expected = Buffer.from(signWebhook(secret, ts.trim(), input.rawBody), 'hex');
    for (const candidate of given) if (timingSafeEqual(candidate, expected)) matched = true;
  }
  if (!matched) throw new WebhookVerificationError('invalid_signature', 'No signature matches the signing secret.');
  return { id: bodyId(input.rawBody), timestamp };
}

/** verifyWebhook as a boolean, for receivers that only need yes or no. */
export function isValidWebhook(input: VerifyWebhookInput): boolean {
  try {
    verifyWebhook(input);
    return true;
  } catch (err) {
    if (err instanceof WebhookVerificationError) return false;
    throw err;
  }
}
