import type { LlmResponse, LlmRequest } from '../llm/types.js';
import type { Provider } from '../../domain/providers.js';
import type { Logger } from '../log/logger.js';
import type { RequestLimiter } from '../limits/request-limiter.js';
import { bufferedMode } from './buffered.js';
import { INGRESS } from './ingress.js';
import { routeCall, type RoutingServices } from './route-call.js';
import type { RoutedCall } from './routed-call.js';
import { abandon, started, type Admission, type Admitted } from './admission.js';

/** What a routed turn needs: the routing services, and the limiter its calls count against. */
export interface InProcessRouting extends RoutingServices {
  limiter?: Pick<RequestLimiter, 'admitRoutedTurn'>;
}

export type RoutedResponse = LlmResponse & { selected_model: string; provider: Provider };

/** A turn's answer as the model gave it, with the model the router chose. */
const IN_PROCESS = bufferedMode<RoutedResponse, AbortSignal | undefined>(
  (_call, signal) => signal,
  (res, _call, c) => ({ ...res, selected_model: c.model, provider: c.provider }),
);

/**
 * The org's router for callers inside Troupe (agent turns with provider
 * `routing`): the same selection, stickiness, fallback and usage as the
 * routing interface (routeCall), without an HTTP hop, and the same org routing
 * rate: a turn is counted as one routing-interface call, and that refusal
 * outranks a router that cannot be read. `charge` is the turn's budget
 * admission, passed before the call was made.
 */
export async function routeInProcess(svc: InProcessRouting, orgId: string, routerId: string | null, req: LlmRequest, log: Logger, billedTo?: RoutedCall['billedTo'], signal?: AbortSignal, charge?: Admitted | null): Promise<RoutedResponse> {
  const admissions: Admission[] = [];
  if (svc.limiter) admissions.push(started(svc.limiter.admitRoutedTurn(orgId)));
  if (charge) admissions.push(Promise.resolve(charge));
  let router;
  try {
    router = await svc.lookup.router(orgId, routerId);
  } catch (e) {
    return abandon(admissions, e);
  }
  return routeCall(svc, { orgId, router, ingress: INGRESS.chat, req: { ...req, stream: false }, log: () => log, billedTo, admissions }, IN_PROCESS, signal);
}
