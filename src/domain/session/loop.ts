import { ConflictError, NotFoundError, PayloadTooLargeError, UnprocessableError } from '../errors.js';
import { pendingCall, USER_ACTOR, type MessageState, type NewEvent } from '../ledger.js';
import { batchJobId } from '../actors/batch.js';
import { webhookJobId, type WebhookJob } from '../actors/webhook.js';
import { messageStatus, modelCall, nextWork, NOTHING, platform, type Decision, type DecideInput, type StatusExtra } from './decision.js';
import { dispatchCall, type ToolCall } from './dispatch.js';
import { MESSAGE_MAX_BYTES, MESSAGE_MAX_MIB, jsonBytes, storedBytes } from './message-size.js';
import type { Effect, ModelResult, SessionCommand } from '../actors/session.js';

const RETRY_BASE_MS = 1000;
const RETRY_MAX_MS = 60_000;

/** The running slot is free: start the next queued message, or return the session to idle. */
export function advance(input: DecideInput, finished: string): { events: NewEvent[]; effects: Effect[] } {
  const next = input.session.queued_message_ids.find((id) => id !== finished);
  const m = next ? input.messages.get(next) : undefined;
  if (m) return { events: [messageStatus(m, 'running')], effects: [nextWork(input, m)] };
  return { events: [platform('session.status_changed', null, { from: 'running', to: 'idle' })], effects: [] };
}

/**
 * Ends a message: its terminal status, lifecycle webhook, batch bookkeeping, then the next message, unless
 * `advance` is false (a message sent with `on_busy` `interrupt` takes the running slot itself).
 */
export function finish(input: DecideInput, m: MessageState, to: 'completed' | 'failed' | 'cancelled', extra: StatusExtra = {}, advanceNext = true): { events: NewEvent[]; effects: Effect[] } {
  const { agent, session } = input;
  const effects: Effect[] = [];
  if (to !== 'cancelled') {
    const job: WebhookJob = { kind: 'session.lifecycle', org_id: agent.org_id, agent_id: agent.agent_id, session_id: session.id, message_id: m.id, type: to === 'completed' ? 'session.completed' : 'session.failed' };
    effects.push({ kind: 'webhook', job_id: webhookJobId(job), job });
  }
  if (agent.batch_id) {
    const job = { org_id: agent.org_id, batch_id: agent.batch_id, session_id: session.id, message_id: m.id, status: to };
    effects.push({ kind: 'batch.child_settled', job_id: batchJobId(job), job });
  }
  const events: NewEvent[] = [messageStatus(m, to, extra)];
  if (!advanceNext) {
    // The caller fills the slot in the same turn; the session stays running.
  } else if (session.running_message_id === m.id) {
    const next = advance(input, m.id);
    events.push(...next.events);
    effects.push(...next.effects);
  } else if (session.status === 'running' && !session.running_message_id && session.queued_message_ids.every((id) => id === m.id)) {
    events.push(platform('session.status_changed', null, { from: 'running', to: 'idle' }));
  }
  return { events, effects };
}

/**
 * Whether a failed model call's try `attempt` is tried again, and after what backoff (doubling from 1 s, at most
 * 60 s, never sooner than the provider's Retry-After), or the error it ends with. The one rule for the built-in
 * loop's calls and a code agent's `ctx.model`.
 */
export function retryPlan(result: { error: string; retryable?: boolean; retry_after_ms?: number }, attempt: number, maxAttempts: number): { retry: true; delay_ms: number } | { retry: false; error: string } {
  if (!result.retryable || attempt >= maxAttempts) return { retry: false, error: result.retryable ? `${result.error} (gave up after ${attempt} attempts)` : result.error };
  const backoff = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** (attempt - 1));
  return { retry: true, delay_ms: Math.max(backoff, result.retry_after_ms ?? 0) };
}

function retry(input: DecideInput, m: MessageState, result: Extract<ModelResult, { ok: false }>): Decision {
  const plan = retryPlan(result, m.attempt, input.agent.max_attempts);
  if (!plan.retry) {
    const done = finish(input, m, 'failed', { error: plan.error, ...(result.code ? { error_code: result.code } : {}) });
    return { events: done.events, effects: done.effects, reply: { event_index: 0, message_id: m.id } };
  }
  const delay = plan.delay_ms;
  return {
    events: [messageStatus(m, 'running', { attempt: m.attempt + 1, error: result.error, retry_in_ms: delay })],
    effects: [modelCall(m, input.session, { attempt: m.attempt + 1, delay_ms: delay })],
    reply: { event_index: 0, message_id: m.id },
  };
}

/** Events and effects for the tool calls of one model response (or a code agent's step); `waiting`: calls the client must answer. */
export function dispatchTools(input: DecideInput, m: MessageState, calls: ToolCall[]): { events: NewEvent[]; effects: Effect[]; waiting: number; unknown: number } {
  const events: NewEvent[] = [];
  const effects: Effect[] = [];
  let waiting = 0;
  let unknown = 0;
  for (const c of calls) {
    const tool = input.agent.tools.get(c.name);
    if (!tool) {
      unknown++;
      events.push(platform('tool.call_failed', m.id, { message_id: m.id, tool_call_id: c.id, tool_name: c.name, kind: null, reason: 'unknown_tool', error: `The agent has no tool named ${c.name}.` }));
      continue;
    }
    const d = dispatchCall(input, m, c, tool);
    events.push(...d.events);
    effects.push(...d.effects);
    if (d.waits_on_client) waiting++;
  }
  return { events, effects, waiting, unknown };
}

export function modelResponded(input: DecideInput, cmd: Extract<SessionCommand, { kind: 'model.responded' }>): Decision {
  const m = input.messages.get(cmd.message_id);
  // A late or repeated answer for a message that moved on is ignored.
  if (!m || m.status !== 'running' || m.attempt !== cmd.attempt || m.model_calls !== cmd.call_index) return NOTHING;
  if (!cmd.result.ok) return retry(input, m, cmd.result);
  const calls = cmd.result.parts.filter((p): p is ToolCall => p.type === 'tool_call');
  const final = calls.length === 0;
  const completed = platform('assistant.message_completed', m.id, { message_id: m.id, call_index: cmd.call_index, parts: cmd.result.parts, stop_reason: cmd.result.stop_reason, usage: cmd.result.usage, final });
  // The session's budget passed a threshold with this call's cost: recorded with the answer that spent it.
  const head = [completed, ...(cmd.result.budget_thresholds ?? []).map((d) => platform('budget.threshold_reached', m.id, d))];
  if (final) {
    const done = finish(input, m, 'completed');
    return { events: [...head, ...done.events], effects: done.effects, reply: { event_index: 0, message_id: m.id } };
  }
  if (m.model_calls + 1 >= input.agent.max_turns) {
    const done = finish(input, m, 'failed', { error: `The agent reached max_turns (${input.agent.max_turns}) without a final answer.` });
    return { events: [...head, ...done.events], effects: done.effects, reply: { event_index: 0, message_id: m.id } };
  }
  const tools = dispatchTools(input, m, calls);
  const events = [...head, ...tools.events];
  const effects = [...tools.effects];
  if (tools.waiting > 0) events.push(messageStatus(m, 'requires_action'));
  else if (tools.unknown === calls.length) effects.push(modelCall({ ...m, model_calls: m.model_calls + 1 }, input.session));
  return { events, effects, reply: { event_index: 0, message_id: m.id } };
}

/** After a tool result: once nothing is pending, the loop resumes with the next model call. */
export function resume(input: DecideInput, m: MessageState, resolved: string, events: NewEvent[]): Decision {
  const stillPending = m.pending_tool_calls.filter((c) => c.id !== resolved);
  const effects: Effect[] = [];
  // A code agent's step also waits for its model calls and sleeps in flight.
  if (stillPending.length === 0 && !m.agent?.pending.length) {
    if (m.status === 'requires_action') events.push(messageStatus(m, 'running'));
    effects.push(nextWork(input, m));
  }
  return { events, effects, reply: { event_index: 0, message_id: m.id } };
}

export function toolCompleted(input: DecideInput, cmd: Extract<SessionCommand, { kind: 'tool.completed' }>): Decision {
  const m = input.messages.get(cmd.message_id);
  if (!m || !pendingCall(m, cmd.attempt, cmd.tool_call_id)) return NOTHING;
  const name = m.pending_tool_calls.find((c) => c.id === cmd.tool_call_id)!.name;
  const base = { message_id: m.id, tool_call_id: cmd.tool_call_id, tool_name: name, kind: 'custom' as const };
  const result = cmd.result.ok && storedBytes(m) + jsonBytes(cmd.result.output) > MESSAGE_MAX_BYTES ? { ok: false as const, error: `The tool's result would take the message past ${MESSAGE_MAX_MIB} MiB.` } : cmd.result;
  const ev = result.ok ? platform('tool.call_completed', m.id, { ...base, output: result.output }) : platform('tool.call_failed', m.id, { ...base, reason: 'error', error: result.error });
  return resume(input, m, cmd.tool_call_id, [ev]);
}

export function deadlinePassed(input: DecideInput, cmd: Extract<SessionCommand, { kind: 'tool.deadline_passed' }>): Decision {
  const m = input.messages.get(cmd.message_id);
  if (!m || !pendingCall(m, cmd.attempt, cmd.tool_call_id)) return NOTHING;
  const name = m.pending_tool_calls.find((c) => c.id === cmd.tool_call_id)!.name;
  const seconds = input.agent.tools.get(name)?.timeout_seconds;
  const ev = platform('tool.call_failed', m.id, { message_id: m.id, tool_call_id: cmd.tool_call_id, tool_name: name, kind: 'external', reason: 'timeout', error: `No result was submitted within ${seconds} s.` });
  return resume(input, m, cmd.tool_call_id, [ev]);
}

export function toolResultSubmitted(input: DecideInput, cmd: Extract<SessionCommand, { kind: 'tool.result_submitted' }>): Decision {
  const m = input.messages.get(cmd.message_id);
  if (!m) throw new NotFoundError('message', cmd.message_id);
  if (!pendingCall(m, null, cmd.tool_call_id)) {
    throw new ConflictError(`Tool call ${cmd.tool_call_id} is not pending on message ${cmd.message_id}.`, 'tool_call_not_pending', 'tool_call_id');
  }
  const name = m.pending_tool_calls.find((c) => c.id === cmd.tool_call_id)!.name;
  const tool = input.agent.tools.get(name);
  if (!tool || tool.kind !== 'external') throw new ConflictError(`Tool call ${cmd.tool_call_id} is not an external tool call.`, 'tool_call_not_external', 'tool_call_id');
  if (m.pending_tool_calls.find((c) => c.id === cmd.tool_call_id)!.awaiting_confirmation) {
    throw new ConflictError(`Tool call ${cmd.tool_call_id} waits for a user.tool_confirmation first; it is requested once allowed.`, 'tool_call_awaiting_confirmation', 'tool_call_id');
  }
  if (storedBytes(m) + jsonBytes(cmd.result) > MESSAGE_MAX_BYTES) {
    throw new PayloadTooLargeError(`This result would take message ${m.id} past ${MESSAGE_MAX_MIB} MiB of content and tool results; submit a smaller one, or is_error true with a short one.`, 'message_output_too_large');
  }
  if (!cmd.is_error) {
    const why = input.agent.validate_output(tool, cmd.result);
    if (why) throw new UnprocessableError(`result does not match the output_schema of ${name}: ${why}`, 'tool_result_invalid', 'result');
  }
  const ev: NewEvent = { type: 'tool.result_submitted', message_id: m.id, source: 'user', actor: USER_ACTOR, data: { message_id: m.id, tool_call_id: cmd.tool_call_id, result: cmd.result, is_error: cmd.is_error } };
  return resume(input, m, cmd.tool_call_id, [ev]);
}
