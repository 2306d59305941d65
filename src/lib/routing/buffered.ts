import type { LlmResponse } from '../llm/types.js';
import type { Exchange } from './exchange.js';
import { startExchange } from './exchange.js';
import type { CallMode } from './route-call.js';
import { routingInfo, upstreamFailure } from './routed-call.js';

/**
 * A mode whose attempt is one whole answer (client.complete): the call commits when the answer has arrived, and
 * settles with its usage at once. A caller that went away ends the call with the attempt's error.
 */
export function bufferedMode<R, X>(start: CallMode<LlmResponse, R, X>['start'], answer: CallMode<LlmResponse, R, X>['answer']): CallMode<LlmResponse, R, X> {
  return {
    timing: 'whole',
    start,
    attempt: (client, req, target, signal) => client.complete(req, target, signal),
    usage: (res) => res.usage,
    answer,
    cancelled: (e, failures) => {
      throw upstreamFailure(e, failures);
    },
  };
}

/** A non-streamed call on the routing interface: the answer as the ingress format's JSON body, with service_routing. */
export const JSON_ANSWER = bufferedMode<Record<string, unknown>, Exchange>(startExchange, (res, call, c, failures) =>
  call.ingress.wire.serializeResponse(res, routingInfo(call, c, failures), call.req.tools),
);
