import type { CancelTracker } from '../../src/pubsub/cancels.js';
import { DONE, defineActor } from '../runtime/actor.js';
import { modelAnswerCommandId, sessionCommand, type ModelCall } from '../session/messages.js';
import { callModel, type ModelCallDeps } from './handler.js';
import { ROUTER_PROXY } from './messages.js';

export type RouterProxyPorts = ModelCallDeps & {
  /** Aborts the calls of a cancelled message (the session publishes the cancel; src/pubsub/cancels.ts). */
  cancels: CancelTracker;
};

/**
 * The router-proxy actor (an activity): makes model calls off the session's
 * turn and answers with a `model.responded` command. Unkeyed: many calls run
 * at once while the session actor stays free. The command id makes a
 * redelivered call one answer.
 */
export const routerProxyActor = defineActor<ModelCall, RouterProxyPorts>({
  address: ROUTER_PROXY,
  async handle(ctx, call) {
    // Tracked before anything is read, so a cancel published from here on reaches this call.
    const work = ctx.ports.cancels.track(call.message_id);
    try {
      const result = await callModel(ctx.ports, call, work.signal);
      // The message ended while the call ran; its session would ignore the answer.
      if (work.signal.aborted) return DONE;
      const command_id = modelAnswerCommandId(call);
      return { sends: [sessionCommand(call.session_id, { kind: 'model.responded', command_id, message_id: call.message_id, attempt: call.attempt, call_index: call.call_index, result }, call.priority)] };
    } finally {
      work.release();
    }
  },
});
