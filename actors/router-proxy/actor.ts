import type { CancelTracker } from '../../src/lib/pubsub/cancels.js';
import { defineActor } from '../runtime/actor.js';
import type { ModelCall } from '../../src/domain/actors/session.js';
import { callModel, type ModelCallDeps } from './call-model.js';
import { answer } from './decide.js';
import { ROUTER_PROXY } from '../../src/domain/actors/router-proxy.js';

export type RouterProxyPorts = ModelCallDeps & {
  /** Aborts the calls of a cancelled message (the session publishes the cancel; src/lib/pubsub/cancels.ts). */
  cancels: CancelTracker;
};

/**
 * The router-proxy actor (an activity): makes model calls off the session's
 * turn and answers with a `model.responded` command (`decide.ts`). Unkeyed:
 * many calls run at once while the session actor stays free.
 */
export const routerProxyActor = defineActor<ModelCall, RouterProxyPorts>({
  address: ROUTER_PROXY,
  async handle(ctx, call) {
    // Tracked before anything is read, so a cancel published from here on reaches this call.
    const work = ctx.ports.cancels.track(call.message_id);
    try {
      const result = await callModel(ctx.ports, call, work.signal);
      return answer(call, result, work.signal.aborted);
    } finally {
      work.release();
    }
  },
  // A call that keeps crashing or freezing its worker: the session fails the message with the error, as for a
  // provider error no retry can fix, instead of waiting for an answer that never comes.
  onQuarantine: async (_ctx, call, error) => answer(call, { ok: false, error, retryable: false }),
});
