import type { IncomingMessage, ServerResponse } from 'node:http';
import { InvalidRequestError } from '../../domain/errors.js';
import type { KeyAuthenticator } from '../api/middleware/auth.js';
import { readJson, refuseContentEncoding } from '../api/middleware/body.js';
import type { RequestLimiter } from '../../lib/limits/request-limiter.js';
import { check } from '../../lib/schemas/validator.js';
import { conversationId } from '../../lib/routing/conversation.js';
import { authenticateRouting } from './credentials.js';
import type { Cancel } from '../../lib/llm/upstream-post.js';
import type { Exchange } from '../../lib/routing/exchange.js';
import { checkEffortUnchanged, planEffort } from '../../lib/routing/effort.js';
import type { Ingress } from '../../lib/routing/ingress.js';
import { countFallback, countSelected, exhausted, isRetryable, requestFor, routingInfo, settle, upstreamFailure, type RoutedCall } from '../../lib/routing/routed-call.js';
import { needsOf, select } from '../../lib/routing/select.js';
import { streamRouted, type StreamServices } from '../../lib/routing/stream.js';

export interface RouterServices extends StreamServices {
  auth: KeyAuthenticator;
  maxBodyBytes: number;
  limiter?: RequestLimiter;
}

/** Counts the request against the org's and key's routing rates; the 429 is thrown, the headers land on the response. */
export async function admitRouting(res: ServerResponse, svc: Pick<RouterServices, 'limiter'>, orgId: string, keyId: string): Promise<void> {
  if (!svc.limiter) return;
  const headers = await svc.limiter.admit('routing', orgId, keyId);
  for (const k in headers) res.setHeader(k, headers[k]);
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

/** Everything up to the first upstream call: auth, body, router, effort rules and selection. */
async function plan(ex: Exchange, ingress: Ingress, routerId: string | null, svc: RouterServices): Promise<RoutedCall> {
  const { orgId, key } = await authenticateRouting(ex.req, svc.auth, ingress.format === 'anthropic');
  // The rate check's Redis round trip runs while the body is read and the conversation's
  // stickiness is fetched; it is awaited before any upstream is called.
  const admitted = admitRouting(ex.res, svc, orgId, key._id);
  admitted.catch(() => undefined);
  let call: RoutedCall;
  try {
    call = await decide(ex, ingress, routerId, svc, orgId);
  } catch (e) {
    await admitted; // a refusal outranks what is wrong with the request
    throw e;
  }
  await admitted;
  return call;
}

async function decide(ex: Exchange, ingress: Ingress, routerId: string | null, svc: RouterServices, orgId: string): Promise<RoutedCall> {
  const body = await readBody(ex.req, ingress, svc.maxBodyBytes);
  const router = await svc.lookup.router(orgId, routerId);
  const req = ingress.wire.parseRequest(body);
  const effort = planEffort(req);
  const convId = conversationId(req);
  const sticky = await svc.stickiness.get(orgId, router.router_id, convId);
  checkEffortUnchanged(effort, sticky?.request_effort, ingress.effortLabel);
  const label = effort.effective && ingress.effortLabel(effort.effective);
  const selection = select(router, needsOf(req, effort.effective, label), sticky?.model ?? null);
  return { orgId, router, ingress, req, plan: effort, convId, sticky, selection, log: ex.log };
}

async function complete(call: RoutedCall, svc: RouterServices, signal: Cancel): Promise<Record<string, unknown>> {
  const failures: string[] = [];
  for (const c of call.selection.order) {
    try {
      const res = await svc.client.complete(requestFor(call, c), await svc.lookup.target(call.orgId, c), signal);
      settle(call, c, res.usage, svc.stickiness, svc.usage);
      countSelected(svc.metrics, call, c, failures);
      return call.ingress.wire.serializeResponse(res, routingInfo(call, c, failures), call.req.tools);
    } catch (e) {
      if (signal.aborted || !isRetryable(e)) throw upstreamFailure(e, failures);
      failures.push(`${c.model}: ${e.message}`);
      countFallback(svc.metrics, c);
      call.log().warn({ model: c.model, err: e.message }, 'routing fallback');
    }
  }
  throw exhausted(failures);
}

/** One routing request, in any of the three formats: the answer's body, or undefined once a stream has been sent. */
export async function handleRouting(ex: Exchange, ingress: Ingress, routerId: string | null, svc: RouterServices): Promise<Record<string, unknown> | undefined> {
  const call = await plan(ex, ingress, routerId, svc);
  const res = ex.res;
  res.setHeader('X-Conversation-Id', call.convId);
  if (call.req.stream) return void (await streamRouted(ex, call, svc));
  // A client that hangs up should not keep an upstream generating for nobody.
  return complete(call, svc, ex.clientGone);
}
