import type { LlmResponse, LlmRequest, Provider } from '../llm/types.js';
import type { Logger } from '../log/logger.js';
import { conversationId } from './conversation.js';
import { checkEffortUnchanged, planEffort } from './effort.js';
import { INGRESS } from './ingress.js';
import { countFallback, countSelected, exhausted, isRetryable, requestFor, settle, upstreamFailure, type RoutedCall } from './routed-call.js';
import { needsOf, select } from './select.js';
import type { StreamServices } from './stream.js';
import type { RequestLimiter } from '../limits/request-limiter.js';

/** What a routed turn needs: the routing interface's services, and the limiter its calls count against. */
export interface InProcessRouting extends StreamServices {
  limiter?: Pick<RequestLimiter, 'admitRoutedTurn'>;
}

/**
 * The org's router for callers inside Troupe (agent turns with provider
 * `routing`): the same selection, stickiness, fallback and usage as the
 * routing interface, without an HTTP hop, and the same org routing rate: a
 * turn is counted as one routing-interface call before its router is read.
 */
export async function routeInProcess(svc: InProcessRouting, orgId: string, routerId: string | null, req: LlmRequest, log: Logger, billedTo?: RoutedCall['billedTo'], signal?: AbortSignal): Promise<LlmResponse & { selected_model: string; provider: Provider }> {
  await svc.limiter?.admitRoutedTurn(orgId);
  const router = await svc.lookup.router(orgId, routerId);
  const ingress = INGRESS.chat;
  const effort = planEffort(req);
  const convId = conversationId(req);
  const sticky = await svc.stickiness.get(orgId, router.router_id, convId);
  checkEffortUnchanged(effort, sticky?.request_effort, ingress.effortLabel);
  const label = effort.effective && ingress.effortLabel(effort.effective);
  const selection = select(router, needsOf(req, effort.effective, label), sticky?.model ?? null);
  const call: RoutedCall = { orgId, router, ingress, req: { ...req, stream: false }, plan: effort, convId, sticky, selection, log: () => log, billedTo };
  const failures: string[] = [];
  for (const c of selection.order) {
    try {
      const res = await svc.client.complete(requestFor(call, c), await svc.lookup.target(orgId, c), signal);
      settle(call, c, res.usage, svc.stickiness, svc.usage);
      countSelected(svc.metrics, call, c, failures);
      return { ...res, selected_model: c.model, provider: c.provider };
    } catch (e) {
      // A cancelled caller gets no fallback to the next candidate.
      if (signal?.aborted || !isRetryable(e)) throw upstreamFailure(e, failures);
      failures.push(`${c.model}: ${e.message}`);
      countFallback(svc.metrics, c);
    }
  }
  throw exhausted(failures);
}
