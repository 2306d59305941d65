import { SYSTEM_ACTOR, type EventType, type MessageState, type MessageStatus, type NewEvent, type NewEventOf, type SessionState } from '../ledger.js';
import type { EventData } from '../event-data.js';
import { agentStepJobId, toolRunJobId } from '../actors/tool-runner.js';
import { agentCallDone, confirmationExpired, deadlinePassed, messageStart, modelCallJobId, type Effect } from '../actors/session.js';
import type { ToolDef } from '../agent.js';
import type { OnBusy } from './on-busy.js';

/** What a command decided: events to append, effects to run after, and what to answer. */
export interface Decision {
  events: NewEvent[];
  effects: Effect[];
  /**
   * Index in `events` of the event the caller gets back, and the message it
   * concerns. `as_of`: the reply's message and session are as they stood
   * after the first `as_of` events (all of them when absent), so that both
   * tell of one moment.
   */
  reply: { event_index: number | null; message_id: string | null; as_of?: number };
}

/** Facts about the session's agent version that decisions need; loaded by the runtime, no I/O here. */
export interface AgentContext {
  org_id: string;
  agent_id: string;
  /** The agent was soft-deleted: its sessions take no new messages, and finish the work they have. */
  agent_deleted: boolean;
  batch_id: string | null;
  /** The session's `on_busy`, set at creation: what a user message without its own does when the session is busy. */
  default_on_busy?: OnBusy;
  tools: ReadonlyMap<string, ToolDef>;
  max_turns: number;
  max_attempts: number;
  /** The entrypoint carries a run function (troupe-js@1 / troupe-py@1): the message's work is the agent's own steps, not the built-in loop. */
  code?: boolean;
  now: Date;
  /** The session events endpoint, for `tool.call_requested`'s submit_url. */
  submit_url: string;
  /** Checks a submitted result against the tool's output_schema; returns why it fails, or null. */
  validate_output(tool: ToolDef, value: unknown): string | null;
}

export interface DecideInput {
  session: SessionState;
  /** The messages the command and the session's queue refer to. */
  messages: Map<string, MessageState>;
  agent: AgentContext;
}

export const NOTHING: Decision = Object.freeze({ events: [], effects: [], reply: { event_index: null, message_id: null } }) as Decision;

/** A platform event of `type`, whose data must be that type's. */
export function platform<T extends EventType>(type: T, messageId: string | null, data: EventData[T]): NewEventOf<T> {
  return { type, message_id: messageId, source: 'platform', actor: SYSTEM_ACTOR, data };
}

/** What a status change may say besides the move: a new attempt, and why. */
export type StatusExtra = Partial<Pick<EventData['message.status_changed'], 'attempt' | 'error' | 'error_code' | 'retry_in_ms' | 'interrupted_by' | 'on_busy'>>;

export function messageStatus(m: MessageState, to: MessageStatus, extra: StatusExtra = {}): NewEventOf<'message.status_changed'> {
  return platform('message.status_changed', m.id, { message_id: m.id, from: m.status, to, attempt: m.attempt, ...extra });
}

/*
 * The effects the session waits on, each built here only: a turn's decision issues them and `outstanding`
 * derives them again from the state (a resume, a replay's `stillOwed`), and a job id that differed between the
 * two would run the work twice or strand it.
 */

/** The message's next model call (its `model_calls`-th), for `attempt` (its current one by default). */
export function modelCall(m: MessageState, session: SessionState, opts: { attempt?: number; delay_ms?: number } = {}): Effect {
  const call = { message_id: m.id, attempt: opts.attempt ?? m.attempt, call_index: m.model_calls };
  return { kind: 'model.call', job_id: modelCallJobId(call), call: { ...call, org_id: '', session_id: session.id }, ...(opts.delay_ms ? { delay_ms: opts.delay_ms } : {}) };
}

/** A code agent's next step: its run replayed against the journal as it stands (its length is the job's fence). */
export function agentStep(m: MessageState, session: SessionState): Effect {
  const job = { kind: 'agent.step' as const, org_id: '', session_id: session.id, message_id: m.id, attempt: m.attempt, at: m.agent?.positions ?? 0 };
  return { kind: 'agent.step', job_id: agentStepJobId(job), job };
}

/** What a running message with nothing in flight waits on next: a code agent's step, else the built-in loop's model call. */
export function nextWork(input: DecideInput, m: MessageState, opts: { attempt?: number; delay_ms?: number } = {}): Effect {
  return input.agent.code ? agentStep(m, input.session) : modelCall(m, input.session, opts);
}

/** A code agent's model call in flight, by its journal position; `call_index` counts its model calls (the scripted provider's turn). */
export function agentModelCall(m: MessageState, session: SessionState, call: { position: number; call_index: number; request: Record<string, unknown>; attempt?: number; delay_ms?: number }): Effect {
  const c = { message_id: m.id, attempt: m.attempt, call_index: call.call_index, position: call.position, request: call.request, ...(call.attempt && call.attempt > 1 ? { call_attempt: call.attempt } : {}) };
  return { kind: 'model.call', job_id: modelCallJobId(c), call: { ...c, org_id: '', session_id: session.id }, ...(call.delay_ms ? { delay_ms: call.delay_ms } : {}) };
}

/** A code agent's durable sleep: a session command due when it ends. */
export function sleepEnd(m: MessageState, position: number, delayMs: number): Effect {
  return { kind: 'session.command', command: agentCallDone(m, position, { ok: true, output: null }, 'sleep'), ...(delayMs > 0 ? { delay_ms: delayMs } : {}) };
}

/** A custom tool call of the message's current attempt, run by the tool-runner actor. */
export function toolRun(input: DecideInput, m: MessageState, call: { id: string; name: string; arguments: Record<string, unknown> }): Effect {
  const job = { org_id: input.agent.org_id, session_id: input.session.id, message_id: m.id, attempt: m.attempt, tool_call_id: call.id, tool_name: call.name, arguments: call.arguments };
  return { kind: 'tool.run', job_id: toolRunJobId(job), job };
}

/** The deadline of an external tool call of the message's current attempt, due in `delayMs` (now when 0). */
export function toolDeadline(m: MessageState, toolCallId: string, delayMs: number): Effect {
  return { kind: 'session.command', command: deadlinePassed(m, toolCallId), ...(delayMs > 0 ? { delay_ms: delayMs } : {}) };
}

/** The end of an `always_ask` call's wait for its confirmation, due in `delayMs` (now when 0). */
export function confirmationDeadline(m: MessageState, toolCallId: string, delayMs: number): Effect {
  return { kind: 'session.command', command: confirmationExpired(m, toolCallId), ...(delayMs > 0 ? { delay_ms: delayMs } : {}) };
}

/** Starts the queued message in a turn of its own. */
export function startLater(messageId: string): Effect {
  return { kind: 'session.command', command: messageStart(messageId) };
}
