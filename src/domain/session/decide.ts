import { ConflictError, NotFoundError, PayloadTooLargeError } from '../errors.js';
import { TERMINAL_MESSAGE_STATUSES, USER_ACTOR, type MessageState, type NewEvent } from '../ledger.js';
import { NOTHING, messageStatus, modelCall, platform, startLater, type Decision, type DecideInput, type StatusExtra } from './decision.js';
import type { Interruption } from './on-busy.js';
import { deadlinePassed, finish, modelResponded, toolCompleted, toolResultSubmitted } from './loop.js';
import { MESSAGE_MAX_BYTES, MESSAGE_MAX_MIB, jsonBytes } from './message-size.js';
import type { Effect, SessionCommand } from '../actors/session.js';
import { outstanding } from './outstanding.js';
import { confirmationExpired, toolConfirmation } from './confirmation.js';

/**
 * Messages that may wait behind the running one. The queue lives on the
 * session document, which every turn rewrites and MongoDB caps at 16 MiB; a
 * client posting to a session whose model hangs would otherwise grow it
 * without end (6,000 a minute at the default rate limit).
 */
export const MAX_QUEUED_MESSAGES = 1000;

type UserMessageCommand = Extract<SessionCommand, { kind: 'user.message' }>;

function userMessage(input: DecideInput, cmd: UserMessageCommand): Decision {
  if (input.messages.has(cmd.message_id)) return { ...NOTHING, reply: { event_index: null, message_id: cmd.message_id } };
  if (input.agent.agent_deleted) {
    // New work against a deleted agent (spec, DELETE /v1/agents/{id}); what it already accepted runs to its end.
    throw new ConflictError(`Agent ${input.agent.agent_id} was deleted, so its sessions take no new messages. The session, its messages and events stay readable; cancels and tool results for work already running are still taken.`, 'agent_deleted');
  }
  if (jsonBytes(cmd.content) > MESSAGE_MAX_BYTES) {
    throw new PayloadTooLargeError(`A message's content may take at most ${MESSAGE_MAX_MIB} MiB as JSON.`, 'message_too_large');
  }
  const policy = cmd.on_busy ?? input.agent.default_on_busy ?? 'enqueue';
  const running = input.session.running_message_id ? input.messages.get(input.session.running_message_id) : undefined;
  const ahead = input.session.running_message_id ?? input.session.queued_message_ids[0];
  if (policy === 'reject' && ahead) {
    // Refused before anything is recorded: the client chose not to wait behind work it did not expect.
    throw new ConflictError(`Session ${input.session.id} is busy (message ${ahead} is ${running ? running.status : 'queued'}), and the message was sent with on_busy reject; nothing was recorded.`, 'session_busy', 'on_busy');
  }
  if ((policy === 'interrupt' || policy === 'rollback') && running && !TERMINAL_MESSAGE_STATUSES.includes(running.status)) {
    return interruptWith(input, cmd, running, policy);
  }
  if (input.session.queued_message_ids.length >= MAX_QUEUED_MESSAGES) {
    throw new ConflictError(`The session already has ${MAX_QUEUED_MESSAGES} messages waiting; send more once some have finished.`, 'session_queue_full');
  }
  const fresh = recordedMessage(input, cmd);
  const events = fresh.events;
  if (input.session.status === 'idle') events.push(platform('session.status_changed', null, { from: 'idle', to: 'running' }));
  // The caller is told of the message as recorded (spec: `queued`), and of the session at that same moment.
  const recorded = events.length;
  const effects: Effect[] = [];
  const free = !input.session.running_message_id && input.session.queued_message_ids.length === 0;
  if (free && cmd.start === 'deferred') {
    // Started by a turn of its own, which its priority queues behind interactive work.
    effects.push(startLater(cmd.message_id));
  } else if (free) {
    // Nothing ahead of it: it starts in this same turn. Otherwise it waits its
    // turn (FIFO) and the message before it starts it when it finishes.
    events.push(messageStatus(fresh.message, 'running'));
    effects.push(modelCall(fresh.message, input.session));
  }
  return { events, effects, reply: { event_index: 0, message_id: cmd.message_id, as_of: recorded } };
}

/** The events of a user message as recorded `queued`, and the message as they leave it. */
function recordedMessage(input: DecideInput, cmd: UserMessageCommand): { events: NewEvent[]; message: MessageState } {
  const events: NewEvent[] = [
    { type: 'user.message', message_id: cmd.message_id, source: 'user', actor: USER_ACTOR, data: { content: cmd.content, metadata: cmd.metadata, message_id: cmd.message_id } },
    platform('message.status_changed', cmd.message_id, { message_id: cmd.message_id, from: null, to: 'queued', attempt: 1 }),
  ];
  const message: MessageState = { id: cmd.message_id, session_id: input.session.id, sequence_number: 0, parts: cmd.content, metadata: cmd.metadata, status: 'queued', attempt: 1, model_calls: 0, pending_tool_calls: [], output: { parts: [] }, error: null, created_at: '', completed_at: null };
  return { events, message };
}

/**
 * `on_busy` `interrupt` or `rollback` while a message runs: the running one ends `cancelled` as a client's
 * cancel ends it (its waiting tool calls fail, its work in flight is aborted, its output so far is kept),
 * its status naming the message that took its place, and the new message starts in this same turn, ahead of
 * any queued behind it. One command, so a redelivery replays or skips all of it together.
 */
function interruptWith(input: DecideInput, cmd: UserMessageCommand, running: MessageState, policy: Interruption): Decision {
  const stopped = cancelled(input, running, { interrupted_by: cmd.message_id, on_busy: policy }, false);
  const fresh = recordedMessage(input, cmd);
  const events = [...stopped.events, ...fresh.events];
  const recorded = events.length;
  events.push(messageStatus(fresh.message, 'running'));
  const effects = [...stopped.effects, modelCall(fresh.message, input.session)];
  return { events, effects, reply: { event_index: stopped.events.length, message_id: cmd.message_id, as_of: recorded } };
}

function startMessage(input: DecideInput, messageId: string): Decision {
  const m = input.messages.get(messageId);
  if (!m || m.status !== 'queued' || input.session.running_message_id || input.session.queued_message_ids[0] !== messageId) return NOTHING;
  return { events: [messageStatus(m, 'running')], effects: [modelCall(m, input.session)], reply: { event_index: 0, message_id: m.id } };
}

function cancel(input: DecideInput, messageId: string): Decision {
  const m = input.messages.get(messageId);
  if (!m) throw new NotFoundError('message', messageId);
  if (TERMINAL_MESSAGE_STATUSES.includes(m.status)) throw new ConflictError(`Message ${messageId} is already ${m.status}.`, 'message_not_cancellable');
  const done = cancelled(input, m);
  return { events: done.events, effects: done.effects, reply: { event_index: done.status_index, message_id: messageId } };
}

/** Ends a message `cancelled` and stops its work in flight: a client's cancel, or a later message's `on_busy`. */
function cancelled(input: DecideInput, m: MessageState, extra: StatusExtra = {}, advanceNext = true): { events: NewEvent[]; effects: Effect[]; status_index: number } {
  // Tool calls still waiting fail first, so the transcript shows each one ended and why.
  const toolFailures = m.pending_tool_calls.map((c) =>
    platform('tool.call_failed', m.id, { message_id: m.id, tool_call_id: c.id, tool_name: c.name, kind: input.agent.tools.get(c.name)?.kind ?? null, reason: 'cancelled', error: 'The message was cancelled.' }),
  );
  const done = finish(input, m, 'cancelled', extra, advanceNext);
  const abort: Effect = { kind: 'work.abort', message_id: m.id };
  return { events: [...toolFailures, ...done.events], effects: [abort, ...done.effects], status_index: toolFailures.length };
}

/**
 * A command of the message stalled or crashed its worker too often and was not run (the runtime's quarantine):
 * the message fails like one whose model failed, its waiting tool calls fail first, its work in flight is
 * stopped, and the session goes on to its next message. A message already ended stays as it is.
 */
function quarantine(input: DecideInput, messageId: string, error: string): Decision {
  const m = input.messages.get(messageId);
  if (!m || TERMINAL_MESSAGE_STATUSES.includes(m.status)) return { ...NOTHING, reply: { event_index: null, message_id: m ? messageId : null } };
  const toolFailures = m.pending_tool_calls.map((c) => platform('tool.call_failed', m.id, { message_id: m.id, tool_call_id: c.id, tool_name: c.name, kind: input.agent.tools.get(c.name)?.kind ?? null, reason: 'error', error }));
  const done = finish(input, m, 'failed', { error });
  const abort: Effect = { kind: 'work.abort', message_id: m.id };
  return { events: [...toolFailures, ...done.events], effects: [abort, ...done.effects], reply: { event_index: toolFailures.length, message_id: messageId } };
}

/**
 * The session actor's decision: pure, so unit tests call it directly. It
 * never does I/O; domain errors it throws become the caller's 4xx.
 */
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
    case 'message.quarantine':
      return quarantine(input, cmd.message_id, cmd.error);
    case 'tool.result_submitted':
      return toolResultSubmitted(input, cmd);
    case 'tool.confirmation':
      return toolConfirmation(input, cmd);
    case 'tool.confirmation_expired':
      return confirmationExpired(input, cmd);
    case 'tool.completed':
      return toolCompleted(input, cmd);
    case 'tool.deadline_passed':
      return deadlinePassed(input, cmd);
    case 'session.resume':
      return { events: [], effects: outstanding(input), reply: { event_index: null, message_id: null } };
    case 'session.delete':
      // The runtime handles it before any decision (delete.ts); nothing to record.
      return NOTHING;
    case 'webhook.delivery_failed':
      return { events: [platform('webhook.delivery_failed', cmd.message_id, { ...cmd.delivery })], effects: [], reply: { event_index: 0, message_id: cmd.message_id } };
  }
}
