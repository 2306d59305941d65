import type { IncomingMessage, ServerResponse } from 'node:http';
import { InvalidRequestError } from '../../domain/errors.js';
import type { KeyAuthenticator } from '../api/middleware/auth.js';
import { readJson, refuseContentEncoding } from '../api/middleware/body.js';
import type { RequestLimiter } from '../../lib/limits/request-limiter.js';
import type { TokenLimiter } from '../../lib/limits/token-limiter.js';
import { check } from '../../lib/schemas/validator.js';
import { JSON_ANSWER } from '../../lib/routing/buffered.js';
import type { Exchange } from '../../lib/routing/exchange.js';
import type { Ingress } from '../../lib/routing/ingress.js';
import { routeCall, type RouteInput, type RoutingServices } from '../../lib/routing/route-call.js';
import { SSE_RELAY } from '../../lib/routing/stream.js';
import { authenticateRouting } from './credentials.js';
import type { Budgets } from '../../lib/budgets/budgets.js';
import { abandon, started, type Admission } from '../../lib/routing/admission.js';
import type { ApiKeyDoc } from '../../store/api-keys.js';
import type { RouterDoc } from '../../domain/views/router.js';
import type { LlmRequest } from '../../lib/llm/types.js';

export interface RouterServices extends RoutingServices {
  auth: KeyAuthenticator;
  maxBodyBytes: number;
  limiter?: RequestLimiter;
  tokens?: TokenLimiter;
  budgets?: Budgets;
}

/**
 * Reserves the call's most possible cost on the budgets in force (org, routing key); 402 when one has no room.
 * Its Redis round trip overlaps the stickiness read, as the rate check's does. The body's size in bytes bounds
 * its input tokens.
 */
export function admitBudget(svc: Pick<RouterServices, 'budgets'>, orgId: string, key: ApiKeyDoc, router: RouterDoc, req: LlmRequest, bodyBytes: number): Admission | undefined {
  return svc.budgets?.admitRouted(orgId, key, router.candidates, req.maxTokens, bodyBytes);
}

/** Counts the request against the org's and key's routing rates; the 429 is thrown, the headers land on the response. */
export async function admitRouting(res: ServerResponse, svc: Pick<RouterServices, 'limiter'>, orgId: string, keyId: string): Promise<null> {
  if (!svc.limiter) return null;
  const headers = await svc.limiter.admit('routing', orgId, keyId);
  for (const k in headers) res.setHeader(k, headers[k]);
  return null;
}

async function readBody(req: IncomingMessage, ingress: Ingress, limit: number): Promise<Record<string, unknown>> {
  // The router's one check: its routed calls are served outside Koa (routing-http.ts), with no route table to hold it.
  // Before readJson, as the base API's route table checks before its parser: the same order on both ingresses.
  refuseContentEncoding(req.headers);
  const valid = check<Record<string, unknown>>(ingress.schema, await readJson(req, limit));
  if (valid.previous_response_id !== undefined) {
    throw new InvalidRequestError('previous_response_id is not supported; resend the full input history.', 'previous_response_id', 'unsupported_parameter');
  }
  return valid;
}

/**
 * One routing request, in any of the three formats: authenticate, count it against the routing rates, read and
 * parse the body, then routeCall. Returns the answer's body, or undefined once a stream has been sent.
 */
export async function handleRouting(ex: Exchange, ingress: Ingress, routerId: string | null, svc: RouterServices): Promise<Record<string, unknown> | void> {
  const { orgId, key } = await authenticateRouting(ex.req, svc.auth, ingress.format === 'anthropic');
  // The rate checks' round trips run while the body is read and the conversation's stickiness is fetched; the
  // token check is read from this process's view of the windows (token-limiter.ts). routeCall awaits them, in
  // this order, before any upstream is called.
  const admissions: Admission[] = [started(admitRouting(ex.res, svc, orgId, key._id))];
  if (svc.tokens) admissions.push(started(svc.tokens.admit(orgId, key)));
  let input: RouteInput;
  try {
    const body = await readBody(ex.req, ingress, svc.maxBodyBytes);
    const router = await svc.lookup.router(orgId, routerId);
    const req = ingress.wire.parseRequest(body);
    // The budgets need the router and the request: their reservation overlaps the stickiness read.
    const budget = admitBudget(svc, orgId, key, router, req, Number(ex.req.headers['content-length']) || JSON.stringify(body).length);
    if (budget) admissions.push(started(budget));
    input = { orgId, router, ingress, req, log: ex.log, admissions };
  } catch (e) {
    return abandon(admissions, e);
  }
  return input.req.stream ? routeCall(svc, input, SSE_RELAY, ex) : routeCall(svc, input, JSON_ANSWER, ex);
}
