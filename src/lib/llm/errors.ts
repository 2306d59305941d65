/**
 * A failed upstream model call. `retryable` failures (connect errors, 429,
 * 5xx, overload) let the router fall back to the next candidate; the others
 * are the caller's problem and are passed on.
 */
export class UpstreamError extends Error {
  override name = 'UpstreamError';
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly status?: number,
    /** The upstream's own error body, when it sent JSON. */
    readonly body?: unknown,
    /** The upstream's Retry-After, in milliseconds, when it sent one. */
    readonly retryAfterMs?: number,
    /** A Troupe error code the failure is known by (UPSTREAM_TOO_LARGE), for the router's envelope. */
    readonly code?: string,
  ) {
    super(message);
  }
}

/** The code of an upstream answer that outgrew its cap: the call was stopped, and is not retried. */
export const UPSTREAM_TOO_LARGE = 'upstream_response_too_large';

/**
 * An upstream answer (or one of its SSE events) past its cap. The base_url is tenant-supplied, so what it sends
 * is hostile input: past the cap the call stops. Not retryable: the same upstream would send the same again.
 */
export function upstreamTooLarge(what: string, limitBytes: number): UpstreamError {
  return new UpstreamError(`${UPSTREAM_TOO_LARGE}: the upstream's ${what} passed ${limitBytes} bytes; the call was stopped`, false, undefined, undefined, undefined, UPSTREAM_TOO_LARGE);
}

export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}
