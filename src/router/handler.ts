import { InvalidRequestError, UnsupportedMediaTypeError } from '../domain/errors.js';
import type { KeyAuthenticator } from '../http/middleware/auth.js';
import { isJsonType, readRaw } from '../http/middleware/body.js';
import type { Ctx } from '../http/types.js';
import type { RequestLimiter } from '../limits/request-limiter.js';
import { check } from '../schemas/validator.js';
import { conversationId } from './conversation.js';
import { authenticateRouting } from './credentials.js';
import { checkEffortUnchanged, planEffort } from './effort.js';
import type { Ingress } from './ingress.js';
import { countFallback, countSelected, exhausted, isRetryable, requestFor, routingInfo, settle, upstreamFailure, type RoutedCall } from './routed-call.js';
import { needsOf, select } from './select.js';
import { streamRouted, type StreamServices } from './stream.js';

export interface RouterServices extends StreamServices {
  auth: KeyAuthenticator;
  maxBodyBytes: number;
  limiter?: RequestLimiter;
}

/** Counts the request against the org's and key's routing rates; the 429 or the headers land on ctx. */
export async function admitRouting(ctx: Ctx, svc: Pick<RouterServices, 'limiter'>, orgId: string, keyId: string): Promise<void> {
  if (svc.limiter) ctx.set(await svc.limiter.admit('routing', orgId, keyId));
}

async function readBody(ctx: Ctx, ingress: Ingress, limit: number): Promise<Record<string, unknown>> {
  if (!isJsonType(ctx.get('Content-Type'))) throw new UnsupportedMediaTypeError('application/json');
  const raw = await readRaw(ctx.req, limit);
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch (e) {
    throw new InvalidRequestError(`Request body is not valid JSON: ${(e as Error).message}`, undefined, 'malformed_json');
  }
  const valid = check<Record<string, unknown>>(ingress.schema, body);
  for (const p of ingress.parts ?? []) if (Array.isArray(valid[p.field])) check(p.schema, valid[p.field], p.field);
  if (valid.previous_response_id !== undefined) {
    throw new InvalidRequestError('previous_response_id is not supported; resend the full input history.', 'previous_response_id', 'unsupported_parameter');
  }
  return valid;
}

/** Everything up to the first upstream call: auth, body, router, effort rules and selection. */
async function plan(ctx: Ctx, ingress: Ingress, routerId: string | null, svc: RouterServices): Promise<RoutedCall> {
  const { orgId, key } = await authenticateRouting(ctx, svc.auth, ingress.format === 'anthropic');
  // The rate check's Redis round trip runs while the body is read and the conversation's
  // stickiness is fetched; it is awaited before any upstream is called.
  const admitted = admitRouting(ctx, svc, orgId, key._id);
  admitted.catch(() => undefined);
  let call: RoutedCall;
  try {
    call = await decide(ctx, ingress, routerId, svc, orgId);
  } catch (e) {
    await admitted; // a refusal outranks what is wrong with the request
    throw e;
  }
  await admitted;
  return call;
}

async function decide(ctx: Ctx, ingress: Ingress, routerId: string | null, svc: RouterServices, orgId: string): Promise<RoutedCall> {
  const body = await readBody(ctx, ingress, svc.maxBodyBytes);
  const router = await svc.lookup.router(orgId, routerId);
  const req = ingress.wire.parseRequest(body);
  const effort = planEffort(req);
  const convId = conversationId(req);
  const sticky = await svc.stickiness.get(orgId, router.router_id, convId);
  checkEffortUnchanged(effort, sticky?.request_effort, ingress.effortLabel);
  const label = effort.effective && ingress.effortLabel(effort.effective);
  const selection = select(router, needsOf(req, effort.effective, label), sticky?.model ?? null);
  return { orgId, router, ingress, req, plan: effort, convId, sticky, selection, log: ctx.state.log };
}

async function complete(call: RoutedCall, svc: RouterServices, signal: AbortSignal): Promise<Record<string, unknown>> {
  const failures: string[] = [];
  for (const c of call.selection.order) {
    try {
      const res = await svc.client.complete(requestFor(call, c), await svc.lookup.target(call.orgId, c), signal);
      settle(call, c, res.usage, svc.stickiness, svc.usage);
      countSelected(svc.metrics, call, c, failures);
      return call.ingress.wire.serializeResponse(res, routingInfo(call, c, failures));
    } catch (e) {
      if (signal.aborted || !isRetryable(e)) throw upstreamFailure(e, failures);
      failures.push(`${c.model}: ${e.message}`);
      countFallback(svc.metrics, c);
      call.log.warn({ model: c.model, err: e.message }, 'routing fallback');
    }
  }
  throw exhausted(failures);
}

/** One routing request, in any of the three formats. */
export async function handleRouting(ctx: Ctx, ingress: Ingress, routerId: string | null, svc: RouterServices): Promise<void> {
  const call = await plan(ctx, ingress, routerId, svc);
  ctx.set('X-Conversation-Id', call.convId);
  if (call.req.stream) return streamRouted(ctx, call, svc);
  // A client that hangs up should not keep an upstream generating for nobody.
  const abort = new AbortController();
  ctx.res.once('close', () => ctx.res.writableFinished || abort.abort());
  ctx.status = 200;
  ctx.body = await complete(call, svc, abort.signal);
}
