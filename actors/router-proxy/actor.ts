import { defineActor } from '../runtime/actor.js';
import { modelAnswerCommandId, sessionCommand, type ModelCall } from '../session/messages.js';
import { callModel, type ModelCallDeps } from './handler.js';
import { ROUTER_PROXY } from './messages.js';

export type RouterProxyPorts = ModelCallDeps;

/**
 * The router-proxy actor (an activity): makes model calls off the session's
 * turn and answers with a `model.responded` command. Unkeyed: many calls run
 * at once while the session actor stays free. The command id makes a
 * redelivered call one answer.
 */
export const routerProxyActor = defineActor<ModelCall, RouterProxyPorts>({
  address: ROUTER_PROXY,
  async handle(ctx, call) {
    const result = await callModel(ctx.ports, call);
    const command_id = modelAnswerCommandId(call);
    return { sends: [sessionCommand(call.session_id, { kind: 'model.responded', command_id, message_id: call.message_id, attempt: call.attempt, call_index: call.call_index, result }, call.priority)] };
  },
});
