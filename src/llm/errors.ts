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
  ) {
    super(message);
  }
}

export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}
