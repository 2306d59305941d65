/**
 * Domain errors. Handlers throw these; one HTTP middleware maps them to the
 * wire shape `{"error": {type, code, message, param?}}` and a status.
 * Nothing else in the code base sets an error status.
 */
/**
 * The error families, by status: 400, 405, 408 and any other 4xx without one of its own invalid_request, 401 authentication, 403 permission, 404 not_found,
 * 409 conflict, 413 and 431 request_too_large, 415 unsupported_media_type, 422 unprocessable_entity, 429 rate_limit,
 * 500-502 api, 503 service_unavailable. Names are Anthropic's error types where it has one (`request_too_large` is
 * its 413, so the routing interface hands an Anthropic SDK the type it knows); the rest are the HTTP reason. They are
 * wire contract and kept as shipped, though not all end in `_error` (docs/decisions.md "Error shape and statuses").
 */
export const ErrorType = Object.freeze({
  invalidRequest: 'invalid_request_error',
  authentication: 'authentication_error',
  permission: 'permission_error',
  notFound: 'not_found_error',
  conflict: 'conflict_error',
  tooLarge: 'request_too_large',
  unsupportedMediaType: 'unsupported_media_type',
  unprocessable: 'unprocessable_entity',
  rateLimit: 'rate_limit_error',
  /** 402: a spend budget is used up (src/domain/budget.ts). */
  paymentRequired: 'payment_required',
  api: 'api_error',
  unavailable: 'service_unavailable',
} as const);

export type ErrorTypeName = (typeof ErrorType)[keyof typeof ErrorType];

export interface ErrorBody {
  type: ErrorTypeName;
  code: string;
  message: string;
  param?: string;
  /** On 402 `budget_exceeded`: the budget that refused (src/domain/budget.ts). */
  budget?: unknown;
}

export class TroupeError extends Error {
  readonly status: number;
  readonly type: ErrorTypeName;
  readonly code: string;
  readonly param?: string;
  readonly headers?: Record<string, string>;

  constructor(status: number, type: ErrorTypeName, code: string, message: string, param?: string, headers?: Record<string, string>) {
    super(message);
    this.name = new.target.name;
    this.status = status;
    this.type = type;
    this.code = code;
    this.param = param;
    this.headers = headers;
  }

  toBody(): ErrorBody {
    const body: ErrorBody = { type: this.type, code: this.code, message: this.message };
    if (this.param !== undefined) body.param = this.param;
    return body;
  }
}

export class InvalidRequestError extends TroupeError {
  constructor(message: string, param?: string, code = 'invalid_request') {
    super(400, ErrorType.invalidRequest, code, message, param);
  }
}

export class AuthenticationError extends TroupeError {
  constructor(message = 'A valid API key is required in the Authorization header as "Bearer <key>".', code = 'invalid_api_key') {
    super(401, ErrorType.authentication, code, message);
  }
}

export class PermissionError extends TroupeError {
  constructor(message: string, code = 'wrong_key_kind') {
    super(403, ErrorType.permission, code, message);
  }
}

export class NotFoundError extends TroupeError {
  constructor(resource: string, id?: string) {
    super(404, ErrorType.notFound, `${resource}_not_found`, id === undefined ? `No such ${resource}.` : `No such ${resource}: ${id}`);
  }
}

export class RouteNotFoundError extends TroupeError {
  constructor(method: string, path: string) {
    super(404, ErrorType.notFound, 'route_not_found', `No route for ${method} ${path}.`);
  }
}

/** 405: the path is served, the method is not; `Allow` lists the methods that are (RFC 9110 §15.5.6). */
export class MethodNotAllowedError extends TroupeError {
  constructor(method: string, path: string, allowed: readonly string[]) {
    super(405, ErrorType.invalidRequest, 'method_not_allowed', `${path} does not take ${method}; it takes ${allowed.join(', ')}.`, undefined, { Allow: allowed.join(', ') });
  }
}

export class ConflictError extends TroupeError {
  constructor(message: string, code = 'conflict', param?: string) {
    super(409, ErrorType.conflict, code, message, param);
  }
}

export class PayloadTooLargeError extends TroupeError {
  constructor(message: string, code = 'request_too_large') {
    super(413, ErrorType.tooLarge, code, message);
  }
}

export class UnsupportedMediaTypeError extends TroupeError {
  constructor(expected: string) {
    super(415, ErrorType.unsupportedMediaType, 'unsupported_media_type', `Content-Type must be ${expected}.`);
  }
}

export class UnsupportedContentEncodingError extends TroupeError {
  constructor(encoding: string) {
    super(415, ErrorType.unsupportedMediaType, 'unsupported_content_encoding', `Content-Encoding ${JSON.stringify(encoding)} is not supported; send the body uncompressed (identity).`);
  }
}

export class UnprocessableError extends TroupeError {
  constructor(message: string, code = 'unprocessable', param?: string) {
    super(422, ErrorType.unprocessable, code, message, param);
  }
}

export class UnavailableError extends TroupeError {
  constructor(message: string, code = 'unavailable', headers?: Record<string, string>) {
    super(503, ErrorType.unavailable, code, message, undefined, headers);
  }
}

/** Normalises anything thrown into an Error. */
export function ensureError(e: unknown): Error {
  if (e instanceof Error) return e;
  return new Error(typeof e === 'string' ? e : JSON.stringify(e));
}

export class NotImplementedError extends TroupeError {
  constructor(message: string) {
    super(501, ErrorType.api, 'not_implemented', message);
  }
}

/** 429: a request rate or the running-session cap was reached; headers say when to retry. */
export class RateLimitError extends TroupeError {
  constructor(message: string, code: 'rate_limited' | 'concurrency_limited' | 'too_many_auth_failures', headers: Record<string, string>) {
    super(429, ErrorType.rateLimit, code, message, undefined, headers);
  }
}
