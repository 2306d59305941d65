import { ConflictError, NotFoundError } from '../errors.js';
import { pendingCall, USER_ACTOR, type MessageState, type NewEvent, type PendingToolCall } from '../ledger.js';
import type { SessionCommand } from '../actors/session.js';
import { messageStatus, NOTHING, platform, type Decision, type DecideInput } from './decision.js';
import { dispatchCall, type ToolCall } from './dispatch.js';
import { resume } from './loop.js';

/*
 * Tool approvals (issue #33 item 1, docs/approvals.md). An `always_ask` call is recorded as
 * `tool.confirmation_requested` (dispatch.ts) and stays pending, marked `awaiting_confirmation`, until the
 * client's `user.tool_confirmation` or its deadline. Each call is answered on its own; the model is called again
 * once every call of its response has a result, as for any tool.
 */

type Confirmation = Extract<SessionCommand, { kind: 'tool.confirmation' }>;
type Expired = Extract<SessionCommand, { kind: 'tool.confirmation_expired' }>;

/** What the model reads when the client denies without saying why. */
export const DEFAULT_DENY_MESSAGE = 'The user denied this tool call.';

/** Whether the message waits on the client for this call: a confirmation, or an external tool's result. */
function waitsOnClient(input: DecideInput, c: PendingToolCall): boolean {
  return c.awaiting_confirmation === true || input.agent.tools.get(c.name)?.kind === 'external';
}

/**
 * After an answer: the message goes back to `running` once no call left pending waits on the client (only
 * allowed tools running), so its status says whom it waits for. `allowed`: the answered call stays pending as
 * it runs, and `waits` says whether it now waits on the client (an external tool's result). With no call left,
 * `resume` moves it.
 */
function statusAfter(input: DecideInput, m: MessageState, answered: string, allowed: { waits: boolean } | null): NewEvent[] {
  if (m.status !== 'requires_action' || allowed?.waits) return [];
  const others = m.pending_tool_calls.filter((c) => c.id !== answered);
  const left = others.length + (allowed ? 1 : 0);
  return left > 0 && !others.some((c) => waitsOnClient(input, c)) ? [messageStatus(m, 'running')] : [];
}

/** A call that still waits for its confirmation, or why the answer is refused (404 unknown message, else 409). */
function awaiting(input: DecideInput, cmd: Confirmation): { m: MessageState; call: PendingToolCall } {
  const m = input.messages.get(cmd.message_id);
  if (!m) throw new NotFoundError('message', cmd.message_id);
  const call = pendingCall(m, null, cmd.tool_call_id) ? m.pending_tool_calls.find((c) => c.id === cmd.tool_call_id) : undefined;
  if (!call?.awaiting_confirmation) {
    throw new ConflictError(
      `Tool call ${cmd.tool_call_id} of message ${cmd.message_id} does not wait for a confirmation: it was already answered, it expired or was cancelled, or its tool never asks.`,
      'tool_call_not_awaiting_confirmation',
      'tool_call_id',
    );
  }
  return { m, call };
}

/** The client's `user.tool_confirmation`: allow runs the call as its tool's kind says; deny fails it with the deny message, and it never runs. */
export function toolConfirmation(input: DecideInput, cmd: Confirmation): Decision {
  const { m, call } = awaiting(input, cmd);
  const answer: NewEvent = {
    type: 'user.tool_confirmation',
    message_id: m.id,
    source: 'user',
    actor: USER_ACTOR,
    data: { message_id: m.id, tool_call_id: call.id, result: cmd.result, ...(cmd.deny_message !== undefined ? { deny_message: cmd.deny_message } : {}) },
  };
  const tool = input.agent.tools.get(call.name);
  if (cmd.result === 'deny' || !tool) {
    const error = cmd.result === 'deny' ? cmd.deny_message || DEFAULT_DENY_MESSAGE : `The agent has no tool named ${call.name}.`;
    const failed = platform('tool.call_failed', m.id, { message_id: m.id, tool_call_id: call.id, tool_name: call.name, kind: tool?.kind ?? null, reason: cmd.result === 'deny' ? 'denied' : 'unknown_tool', error });
    const events = [answer, failed, ...statusAfter(input, m, call.id, null)];
    return resume(input, m, call.id, events);
  }
  const part = m.output.parts.find((p): p is ToolCall => p.type === 'tool_call' && p.id === call.id);
  const run = dispatchCall(input, m, { type: 'tool_call', id: call.id, name: call.name, arguments: part?.arguments ?? {} }, tool, true);
  const events = [answer, ...run.events, ...statusAfter(input, m, call.id, { waits: run.waits_on_client })];
  return { events, effects: run.effects, reply: { event_index: 0, message_id: m.id } };
}

/** No answer by `expires_at`: the call fails as an external call's does at its deadline, and the model is told. */
export function confirmationExpired(input: DecideInput, cmd: Expired): Decision {
  const m = input.messages.get(cmd.message_id);
  if (!m || !pendingCall(m, cmd.attempt, cmd.tool_call_id)) return NOTHING;
  const call = m.pending_tool_calls.find((c) => c.id === cmd.tool_call_id)!;
  // Answered meanwhile (allowed, and now running or requested): this deadline is not its any more.
  if (!call.awaiting_confirmation) return NOTHING;
  const tool = input.agent.tools.get(call.name);
  const failed = platform('tool.call_failed', m.id, { message_id: m.id, tool_call_id: call.id, tool_name: call.name, kind: tool?.kind ?? null, reason: 'timeout', error: `No confirmation was given within ${tool?.timeout_seconds ?? '?'} s.` });
  return resume(input, m, call.id, [failed, ...statusAfter(input, m, call.id, null)]);
}
