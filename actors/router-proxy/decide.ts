import { TERMINAL_MESSAGE_STATUSES, type MessageState } from '../../src/domain/ledger.js';
import type { AgentVersionDoc } from '../../src/store/agents.js';
import type { LlmOption, Script } from '../../src/domain/agent.js';
import { isProvider } from '../../src/domain/providers.js';
import type { SessionDoc } from '../../src/domain/views/session.js';
import { DONE, type Outcome } from '../runtime/actor.js';
import { agentCallDone, modelAnswerCommandId, sessionCommand, type ModelCall, type ModelResult } from '../../src/domain/actors/session.js';
import { agentCallResult } from './agent-request.js';
import { quotesToolResults } from './scripted.js';

/**
 * The router-proxy's decisions, pure so unit tests call them directly: which
 * adapter a model call goes through (or the failure it ends with before any
 * call), and what the session hears after it. The call itself (a provider's
 * stream, the org's router, a script) is the activity's own work.
 */

/** What a call ends with when its message was cancelled; the session ignores it, the actor does not even send it. */
export const CANCELLED: ModelResult = Object.freeze({ ok: false, error: 'The message was cancelled.', retryable: false });

const failed = (error: string): { kind: 'fail'; result: ModelResult } => ({ kind: 'fail', result: { ok: false, error } });

/** The call names the session's version and llm option, so a scripted call needs no session read; older calls do not. */
export function needsSession(call: ModelCall): boolean {
  return !call.version_id || !call.llm_id;
}

/** The version and llm option the call goes to: named by the call, else the session's (undefined: not read). */
export function callTarget(call: ModelCall, session: SessionDoc | null | undefined): { kind: 'fail'; result: ModelResult } | { kind: 'target'; version_id: string; llm_id: string } {
  const version_id = call.version_id ?? session?.version_id;
  // A code agent's call may name its llm option; else the session's.
  const named = typeof call.request?.llm_id === 'string' ? call.request.llm_id : undefined;
  const llm_id = named ?? call.llm_id ?? session?.llm_id;
  if (!version_id || !llm_id) return failed(`Session ${call.session_id} no longer exists.`);
  return { kind: 'target', version_id, llm_id };
}

export type Route =
  | { kind: 'fail'; result: ModelResult }
  /** The scripted provider; `needs_output`: its script quotes tool results, so the message's output so far is read. */
  | { kind: 'scripted'; script: Script | undefined; needs_output: boolean }
  /** A real model (a provider or the org's router), which needs the session and the message. */
  | { kind: 'live'; option: LlmOption; version: AgentVersionDoc };

/** The adapter the call's llm option names, given the version (null when it is gone). */
export function route(target: { version_id: string; llm_id: string }, version: AgentVersionDoc | null): Route {
  if (!version) return failed(`Agent version ${target.version_id} no longer exists.`);
  const option = version.llm_options.find((o) => o.id === target.llm_id);
  if (!option) return failed(`LLM option ${target.llm_id} is not in version ${version._id}.`);
  if (option.provider !== 'scripted') return { kind: 'live', option, version };
  const script = version.scripts?.[option.id];
  return { kind: 'scripted', script, needs_output: quotesToolResults(script) };
}

/**
 * Before a live call, with the session and the message read: the call to
 * make, or what it ends with. A message that ended already was cancelled
 * before this call started (the abort was published before the actor
 * listened for it).
 */
export function liveCall(call: ModelCall, option: LlmOption, session: SessionDoc | null, message: MessageState | null):
  | { kind: 'fail'; result: ModelResult }
  | { kind: 'provider' | 'router'; session: SessionDoc; message: MessageState } {
  if (!session) return failed(`Session ${call.session_id} no longer exists.`);
  if (!message) return failed(`Message ${call.message_id} no longer exists.`);
  if (TERMINAL_MESSAGE_STATUSES.includes(message.status)) return { kind: 'fail', result: CANCELLED };
  if (isProvider(option.provider)) return { kind: 'provider', session, message };
  if (option.provider === 'routing') return { kind: 'router', session, message };
  return failed(`Provider ${String(option.provider)} is not supported.`);
}

/**
 * The answer to the session: a `model.responded` command whose id makes a
 * redelivered call one answer; nothing when the message ended while the call
 * ran (its session would ignore the answer).
 */
export function answer(call: ModelCall, result: ModelResult, cancelled = false): Outcome {
  if (cancelled) return DONE;
  if (call.position !== undefined) {
    // A code agent's ctx.model: the answer goes back to its journal position.
    return { sends: [sessionCommand(call.session_id, agentCallDone({ id: call.message_id, attempt: call.attempt }, call.position, agentCallResult(result), 'model', call.call_attempt), call.priority)] };
  }
  const command_id = modelAnswerCommandId(call);
  return { sends: [sessionCommand(call.session_id, { kind: 'model.responded', command_id, message_id: call.message_id, attempt: call.attempt, call_index: call.call_index, result }, call.priority)] };
}
