import { TroupeApiError, TroupeConnectionError } from './errors.js';

/**
 * When a failed call is sent again, and after how long. A call is replayable
 * when sending it twice cannot do the work twice: an idempotent method, or a
 * POST that carries an idempotency key (the server answers a repeat with the
 * first answer). Only those are retried after a lost answer or a 5xx; a 429
 * is retried for any call, since the server refused it before doing anything.
 */

/** A wait the server asks for beyond this is the caller's to decide: the error is thrown. */
const MAX_RETRY_AFTER_S = 10;
const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'PUT', 'DELETE']);

export function isReplayable(method: string, headers: Record<string, string>, body: unknown, idempotent: boolean | undefined): boolean {
  if (typeof ReadableStream !== 'undefined' && body instanceof ReadableStream) return false; // consumed by the first attempt
  return IDEMPOTENT_METHODS.has(method) || idempotent === true || Object.keys(headers).some((h) => h.toLowerCase() === 'idempotency-key');
}

/** Milliseconds to wait before retry number `attempt + 1`, or null when the error should be thrown. */
export function retryDelayMs(err: unknown, attempt: number, replayable: boolean): number | null {
  if (err instanceof TroupeConnectionError) return replayable ? backoffMs(attempt) : null;
  if (!(err instanceof TroupeApiError)) return null;
  const asked = err.retryAfterSeconds;
  if (asked !== undefined && asked > MAX_RETRY_AFTER_S) return null;
  const wait = asked !== undefined ? asked * 1000 : backoffMs(attempt);
  if (err.status === 429) return wait;
  if (!replayable) return null;
  // The first request with this key is still being worked on; its answer is what a repeat will get.
  if (err.status === 409 && err.code === 'idempotency_key_in_flight') return backoffMs(attempt);
  return err.status >= 500 && err.status !== 501 ? wait : null;
}

/** 0.5 s, 1 s, 2 s … up to 8 s, each with jitter so many clients do not retry in step. */
function backoffMs(attempt: number): number {
  const base = Math.min(8000, 500 * 2 ** attempt);
  return base / 2 + Math.random() * (base / 2);
}

/** A fresh Idempotency-Key: the helpers that create work send one unless the caller gave theirs, so their retries are safe. */
export function newIdempotencyKey(): string {
  const c = globalThis.crypto;
  if (typeof c?.randomUUID === 'function') return c.randomUUID();
  // randomUUID needs a secure context in browsers; getRandomValues does not.
  return Array.from(c.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
}
