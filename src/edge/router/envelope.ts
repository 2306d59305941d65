import type { ErrorBody } from '../../domain/errors.js';

/**
 * Errors on the routing interface in the envelope of the vendor whose API the
 * path imitates, so an SDK pointed at the router raises its own typed error
 * with the right message. Troupe's `code` (and `param`) ride inside, where
 * each SDK exposes extra fields.
 */

/** The error families Anthropic's SDK knows; anything else is told as the nearest one. */
const ANTHROPIC_TYPES = new Set(['invalid_request_error', 'authentication_error', 'permission_error', 'not_found_error', 'conflict_error', 'request_too_large', 'rate_limit_error', 'api_error', 'overloaded_error']);

/** Anthropic Messages: `{"type":"error","error":{type,message},"request_id"}`; the code also in `details.error_code`, which the SDK reads. */
export function anthropicEnvelope(status: number, body: ErrorBody, requestId: string): Record<string, unknown> {
  let type: string = body.type;
  if (!ANTHROPIC_TYPES.has(type)) type = status === 503 ? 'overloaded_error' : status >= 500 ? 'api_error' : 'invalid_request_error';
  const details: Record<string, string> = { error_code: body.code };
  if (body.param !== undefined) details.param = body.param;
  return { type: 'error', error: { type, message: body.message, code: body.code, ...(body.param !== undefined ? { param: body.param } : {}), details, ...budgetOf(body) }, request_id: requestId };
}

/** OpenAI: `{"error":{message,type,param,code}}` with `param` and `code` always present (null when unknown). */
export function openaiEnvelope(body: ErrorBody): Record<string, unknown> {
  return { error: { message: body.message, type: body.type, param: body.param ?? null, code: body.code, ...budgetOf(body) } };
}

/** A 402's budget rides along in either envelope, as in the base API's. */
const budgetOf = (body: ErrorBody) => (body.budget !== undefined ? { budget: body.budget } : {});

/** `/v1/messages` and `/{router_id}/messages` speak Anthropic; every other routing path speaks OpenAI. */
export function routingEnvelope(path: string, status: number, body: ErrorBody, requestId: string): Record<string, unknown> {
  return /\/messages$/.test(path) ? anthropicEnvelope(status, body, requestId) : openaiEnvelope(body);
}
