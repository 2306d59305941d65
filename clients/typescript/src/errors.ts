/** The API's error shape (DESIGN §6): every non-2xx answer carries it. */
export interface ApiErrorBody {
  type: string;
  code: string;
  message: string;
  param?: string;
}

/** The server answered with an error status. `status`, `type`, `code` and `param` come from the answer. */
export class TroupeApiError extends Error {
  override name = 'TroupeApiError';
  readonly type: string;
  readonly code: string;
  readonly param: string | undefined;
  /** The answer's Retry-After in seconds (429, 503), when it had one. */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    readonly status: number,
    readonly error: ApiErrorBody,
    readonly requestId: string | null,
    retryAfter?: string | null,
  ) {
    super(`${status} ${error.code}: ${error.message}`);
    this.type = error.type;
    this.code = error.code;
    this.param = error.param;
    this.retryAfterSeconds = parseRetryAfter(retryAfter);
  }
}

/** 400, 413, 415, 422: the request itself is wrong. */
export class InvalidRequestError extends TroupeApiError {
  override name = 'InvalidRequestError';
}
/** 401 and 403: a missing, revoked or wrong kind of key. */
export class AuthenticationError extends TroupeApiError {
  override name = 'AuthenticationError';
}
/** 404: unknown id (including another org's). */
export class NotFoundError extends TroupeApiError {
  override name = 'NotFoundError';
}
/** 409: the resource is not in a state that allows this. */
export class ConflictError extends TroupeApiError {
  override name = 'ConflictError';
}
/** 429: slow down; `retryAfterSeconds` when the server said. */
export class RateLimitError extends TroupeApiError {
  override name = 'RateLimitError';
}
/** 5xx: the service failed or is not ready; safe to retry reads. */
export class ServerError extends TroupeApiError {
  override name = 'ServerError';
}

/** No HTTP answer at all: refused, reset, DNS, or aborted by a timeout. */
export class TroupeConnectionError extends Error {
  override name = 'TroupeConnectionError';
  constructor(
    message: string,
    override readonly cause?: unknown,
  ) {
    super(message);
  }
}

/** Retry-After as seconds: delta-seconds or an HTTP date. */
function parseRetryAfter(value: string | null | undefined): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

/** The right error class for a status and body; a body without the shape still gets a readable message. */
export function apiError(status: number, body: unknown, requestId: string | null, retryAfter?: string | null): TroupeApiError {
  const shaped = (body as { error?: ApiErrorBody } | null)?.error;
  const error: ApiErrorBody =
    shaped && typeof shaped.message === 'string' ? shaped : { type: 'api_error', code: `http_${status}`, message: typeof body === 'string' && body ? body.slice(0, 500) : `HTTP ${status}` };
  const Cls =
    status === 401 || status === 403
      ? AuthenticationError
      : status === 404
        ? NotFoundError
        : status === 409
          ? ConflictError
          : status === 429
            ? RateLimitError
            : status >= 500
              ? ServerError
              : InvalidRequestError;
  return new Cls(status, error, requestId, retryAfter);
}
