import type { Middleware } from 'koa';
import { ErrorType, TroupeError, type ErrorBody } from '../../../domain/errors.js';
import type { Logger } from '../../../lib/log/logger.js';
import type { AppState } from '../types.js';

interface HttpLikeError {
  status?: number;
  statusCode?: number;
  expose?: boolean;
  message?: string;
  type?: string;
}

const TYPE_BY_STATUS: Record<number, (typeof ErrorType)[keyof typeof ErrorType]> = {
  400: ErrorType.invalidRequest,
  401: ErrorType.authentication,
  403: ErrorType.permission,
  404: ErrorType.notFound,
  405: ErrorType.invalidRequest,
  409: ErrorType.conflict,
  413: ErrorType.tooLarge,
  415: ErrorType.unsupportedMediaType,
  422: ErrorType.unprocessable,
  429: ErrorType.rateLimit,
};

/**
 * Errors of a store that is unreachable for a moment (MongoDB restarting or
 * failing over, Redis reconnecting): the request did nothing wrong and a
 * retry soon will do, so they are a 503 with Retry-After, not a 500.
 */
const UNREACHABLE = new Set(['MongoNetworkError', 'MongoNetworkTimeoutError', 'MongoServerSelectionError', 'MongoPoolClearedError', 'MaxRetriesPerRequestError']);

/** Socket errors a driver lets through raw when its server goes away mid-write. */
const SOCKET_CODES = new Set(['EPIPE', 'ECONNRESET', 'ECONNREFUSED']);

const IOREDIS_MESSAGES = new Set(['Connection is closed.', 'Command timed out']);

function storeUnreachable(e: unknown): boolean {
  const err = e as { name?: string; message?: string; code?: string } | null;
  // ioredis raises plain Errors for a closed connection and for a command past its `commandTimeout`.
  return !!err && (UNREACHABLE.has(err.name ?? '') || SOCKET_CODES.has(err.code ?? '') || (err.name === 'Error' && IOREDIS_MESSAGES.has(err.message ?? '')));
}

/**
 * The one place that decides what a client sees for an error. Domain errors
 * map to their status; errors raised by Koa or Node for client input (bad
 * encodings, aborted bodies) keep their 4xx; anything else is a 500 whose
 * details go to the log, never to the client.
 */
/** Wraps the error body for the wire; the base API sends `{"error": body}`. */
export type ErrorEnvelope = (path: string, status: number, body: ErrorBody, requestId: string) => unknown;

const troupeEnvelope: ErrorEnvelope = (_path, _status, body) => ({ error: body });

/** What a client is told for an error: status, body and extra headers; logs what it hides. */
export interface MappedError {
  status: number;
  body: ErrorBody;
  headers: Record<string, string> | undefined;
}

/**
 * Every key (API, routing, metrics) is a bearer token, and a 401 names the scheme to use (RFC 9110 §15.5.2,
 * RFC 6750 §3). The realm only labels the challenge: the base API and the routing interface are different
 * origins, so their keys are told apart without a realm each.
 */
const BEARER_CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="troupe"' };

/** Decides the answer to any error; shared by the Koa apps and the router's routed paths. */
export function mapError(thrown: unknown, log: Logger | undefined, requestId: string): MappedError {
  const mapped = decide(thrown, log, requestId);
  if (mapped.status === 401) mapped.headers = { ...BEARER_CHALLENGE, ...mapped.headers };
  return mapped;
}

function decide(thrown: unknown, log: Logger | undefined, requestId: string): MappedError {
  if (thrown instanceof TroupeError) return { status: thrown.status, body: thrown.toBody(), headers: thrown.headers };
  const e = thrown as HttpLikeError;
  const s = e.status ?? e.statusCode ?? 500;
  if (storeUnreachable(thrown)) {
    log?.warn({ err: thrown }, 'store unreachable');
    const body = { type: ErrorType.unavailable, code: 'store_unavailable', message: 'A data store is briefly unreachable; retry shortly (with the same Idempotency-Key, if any).' };
    return { status: 503, body, headers: { 'Retry-After': '1' } };
  }
  if (s >= 400 && s < 500 && e.expose !== false) {
    return { status: s, body: { type: TYPE_BY_STATUS[s] ?? ErrorType.invalidRequest, code: e.type ?? 'invalid_request', message: e.message ?? 'Bad request.' }, headers: undefined };
  }
  log?.error({ err: thrown }, 'unhandled error');
  return { status: 500, body: { type: ErrorType.api, code: 'internal_error', message: `Internal error. Quote request id ${requestId} when reporting it.` }, headers: undefined };
}

export function errorMapper(envelope: ErrorEnvelope = troupeEnvelope): Middleware<AppState> {
  return async (ctx, next) => {
    try {
      await next();
    } catch (thrown) {
      if (ctx.headerSent || !ctx.writable) {
        ctx.state.log?.warn({ err: thrown }, 'error after response started');
        return;
      }
      const { status, body, headers } = mapError(thrown, ctx.state.log, ctx.state.requestId);
      for (const [k, v] of Object.entries(headers ?? {})) ctx.set(k, v);
      ctx.status = status;
      ctx.type = 'application/json';
      ctx.body = envelope(ctx.path, status, body, ctx.state.requestId);
    }
  };
}
