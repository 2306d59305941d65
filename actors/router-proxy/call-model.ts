import type { MessageState } from '../../src/domain/ledger.js';
import type { AgentVersionDoc } from '../../src/store/agents.js';
import type { ModelCall, ModelResult } from '../../src/domain/actors/session.js';
import type { SessionDoc } from '../../src/domain/views/session.js';
import { callTarget, liveCall, needsSession, route } from './decide.js';
import { admitTurnCall, callProvider, callRouter, type ProviderDeps } from './providers.js';
import { scriptedResponse } from './scripted.js';

export interface ModelCallDeps extends ProviderDeps {
  session(id: string): Promise<SessionDoc | null>;
  version(orgId: string, id: string): Promise<AgentVersionDoc | null>;
  message(orgId: string, sessionId: string, id: string): Promise<MessageState | null>;
}

/**
 * Makes one model call for a session's message, with the adapter its llm
 * option names (`decide.ts` picks it). Reads only what the adapter needs:
 * the scripted provider no session (the call names the version and option)
 * and the message only when its script quotes tool results; real providers
 * read the session for its keys and history, and the message.
 */
export async function callModel(deps: ModelCallDeps, call: ModelCall, signal?: AbortSignal): Promise<ModelResult> {
  let session: SessionDoc | null | undefined;
  const loadSession = async () => (session === undefined ? (session = await deps.session(call.session_id)) : session);
  if (needsSession(call)) await loadSession();
  const target = callTarget(call, session);
  if (target.kind === 'fail') return target.result;
  const r = route(target, await deps.version(call.org_id, target.version_id));
  if (r.kind === 'fail') return r.result;
  if (r.kind === 'scripted') {
    const output = r.needs_output ? ((await deps.message(call.org_id, call.session_id, call.message_id))?.output.parts ?? []) : [];
    return scriptedResponse(r.script, call.call_index, output);
  }
  const current = await loadSession();
  const message = current ? await deps.message(call.org_id, call.session_id, call.message_id) : null;
  const live = liveCall(call, r.option, current, message);
  if (live.kind === 'fail') return live.result;
  const charge = await admitTurnCall(deps, live.session);
  if (charge && 'ok' in charge) return charge;
  return live.kind === 'provider' ? callProvider(deps, live.session, r.version, r.option, call, live.message, signal, charge) : callRouter(deps, live.session, r.version, r.option, live.message, signal, call.request, charge);
}
