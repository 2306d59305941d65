import { ConflictError, NotFoundError } from '../../src/domain/errors.js';
import { SYSTEM_ACTOR, TERMINAL_MESSAGE_STATUSES, USER_ACTOR, type MessageState, type MessageStatus, type NewEvent, type SessionState } from '../../src/domain/ledger.js';
import { modelCallJobId, type Effect, type ModelResult, type SessionCommand } from './messages.js';

/** What a command decided: events to append, effects to run after, and what to answer. */
export interface Decision {
  events: NewEvent[];
  effects: Effect[];
  /** Index in `events` of the event the caller gets back, and the message it concerns. */
  reply: { event_index: number | null; message_id: string | null };
}

export interface DecideInput {
  session: SessionState;
  /** The messages the command and the session's queue refer to. */
  messages: Map<string, MessageState>;
}

const NOTHING: Decision = { events: [], effects: [], reply: { event_index: null, message_id: null } };

function platform(type: NewEvent['type'], messageId: string | null, data: Record<string, unknown>): NewEvent {
  return { type, message_id: messageId, source: 'platform', actor: SYSTEM_ACTOR, data };
}

function messageStatus(m: MessageState, to: MessageStatus, extra: Record<string, unknown> = {}): NewEvent {
  return platform('message.status_changed', m.id, { message_id: m.id, from: m.status, to, attempt: m.attempt, ...extra });
}

function modelCall(m: MessageState, callIndex: number, session: SessionState): Effect {
  const call = { message_id: m.id, attempt: m.attempt, call_index: callIndex };
  return { kind: 'model.call', job_id: modelCallJobId(call), call: { ...call, org_id: '', session_id: session.id } };
}

/**
 * After `finished` leaves the running slot: start the next queued message,
 * or return the session to idle when nothing is waiting.
 */
function advance(input: DecideInput, finished: string): { events: NewEvent[]; effects: Effect[] } {
  const next = input.session.queued_message_ids.find((id) => id !== finished);
  const m = next ? input.messages.get(next) : undefined;
  if (m) return { events: [messageStatus(m, 'running')], effects: [modelCall(m, 0, input.session)] };
  return { events: [platform('session.status_changed', null, { from: 'running', to: 'idle' })], effects: [] };
}

function userMessage(input: DecideInput, cmd: Extract<SessionCommand, { kind: 'user.message' }>): Decision {
  if (input.messages.has(cmd.message_id)) return { ...NOTHING, reply: { event_index: null, message_id: cmd.message_id } };
  const events: NewEvent[] = [
    { type: 'user.message', message_id: cmd.message_id, source: 'user', actor: USER_ACTOR, data: { content: cmd.content, metadata: cmd.metadata, message_id: cmd.message_id } },
    platform('message.status_changed', cmd.message_id, { message_id: cmd.message_id, from: null, to: 'queued', attempt: 1 }),
  ];
  if (input.session.status === 'idle') events.push(platform('session.status_changed', null, { from: 'idle', to: 'running' }));
  const effects: Effect[] = [];
  // The message is answered as `queued`; a follow-up turn starts it, so
  // messages sent while another runs simply wait their turn (FIFO).
  if (!input.session.running_message_id && input.session.queued_message_ids.length === 0) {
    effects.push({ kind: 'session.command', command: { kind: 'message.start', command_id: `start-${cmd.message_id}`, message_id: cmd.message_id } });
  }
  return { events, effects, reply: { event_index: 0, message_id: cmd.message_id } };
}

function startMessage(input: DecideInput, messageId: string): Decision {
  const m = input.messages.get(messageId);
  if (!m || m.status !== 'queued' || input.session.running_message_id || input.session.queued_message_ids[0] !== messageId) return NOTHING;
  return { events: [messageStatus(m, 'running')], effects: [modelCall(m, 0, input.session)], reply: { event_index: 0, message_id: m.id } };
}

function modelResponded(input: DecideInput, cmd: Extract<SessionCommand, { kind: 'model.responded' }>): Decision {
  const m = input.messages.get(cmd.message_id);
  // A late or repeated answer for a message that moved on is ignored.
  if (!m || m.status !== 'running' || m.attempt !== cmd.attempt) return NOTHING;
  const events = outcomeEvents(m, cmd.result);
  const next = advance(input, m.id);
  return { events: [...events, ...next.events], effects: next.effects, reply: { event_index: 0, message_id: m.id } };
}

function outcomeEvents(m: MessageState, result: ModelResult): NewEvent[] {
  if (!result.ok) return [messageStatus(m, 'failed', { error: result.error })];
  if (result.parts.some((p) => p.type === 'tool_call')) {
    return [messageStatus(m, 'failed', { error: 'The model called a tool; tool calls are not supported by this deployment yet.' })];
  }
  return [
    platform('assistant.message_completed', m.id, { message_id: m.id, output: { parts: result.parts }, stop_reason: result.stop_reason, usage: result.usage }),
    messageStatus(m, 'completed'),
  ];
}

function cancel(input: DecideInput, messageId: string): Decision {
  const m = input.messages.get(messageId);
  if (!m) throw new NotFoundError('message', messageId);
  if (TERMINAL_MESSAGE_STATUSES.includes(m.status)) throw new ConflictError(`Message ${messageId} is already ${m.status}.`, 'message_not_cancellable');
  const events = [messageStatus(m, 'cancelled')];
  let effects: Effect[] = [];
  const nothingLeft = !input.session.running_message_id && input.session.queued_message_ids.every((id) => id === messageId);
  if (input.session.running_message_id === messageId) {
    const next = advance(input, messageId);
    events.push(...next.events);
    effects = next.effects;
  } else if (nothingLeft && input.session.status === 'running') {
    events.push(platform('session.status_changed', null, { from: 'running', to: 'idle' }));
  }
  return { events, effects, reply: { event_index: 0, message_id: messageId } };
}

function toolResult(input: DecideInput, cmd: Extract<SessionCommand, { kind: 'tool.result_submitted' }>): Decision {
  if (!input.messages.has(cmd.message_id)) throw new NotFoundError('message', cmd.message_id);
  throw new ConflictError(`Tool call ${cmd.tool_call_id} is not pending on message ${cmd.message_id}.`, 'tool_call_not_pending', 'tool_call_id');
}

/** The session actor's decision: pure, so unit tests call it directly. Domain errors become the caller's 4xx. */
export function decide(input: DecideInput, cmd: SessionCommand): Decision {
  switch (cmd.kind) {
    case 'user.message':
      return userMessage(input, cmd);
    case 'message.start':
      return startMessage(input, cmd.message_id);
    case 'model.responded':
      return modelResponded(input, cmd);
    case 'message.cancel':
      return cancel(input, cmd.message_id);
    case 'tool.result_submitted':
      return toolResult(input, cmd);
    case 'webhook.delivery_failed':
      return { events: [platform('webhook.delivery_failed', cmd.message_id, { ...cmd.delivery })], effects: [], reply: { event_index: 0, message_id: cmd.message_id } };
    case 'tool.completed':
    case 'tool.deadline_passed':
      return NOTHING;
  }
}
