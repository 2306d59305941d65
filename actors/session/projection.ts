import { TERMINAL_MESSAGE_STATUSES, type EventEnvelope, type MessageState, type MessageStatus, type SessionState, type ContentBlock, type OutputPart, type SessionStatus } from '../../src/domain/ledger.js';

/**
 * Applies one ledger event to the session and message read models. Pure: the
 * same function serves the live turn and the catch-up after a crash, so the
 * projections can always be rebuilt from the ledger.
 */
export function applyEvent(session: SessionState, messages: Map<string, MessageState>, ev: EventEnvelope): void {
  if (ev.sequence_number <= session.last_sequence) return;
  session.last_sequence = ev.sequence_number;
  const d = ev.data;
  switch (ev.type) {
    case 'user.message': {
      const id = ev.message_id!;
      messages.set(id, {
        id,
        session_id: ev.session_id,
        sequence_number: ev.sequence_number,
        parts: d.content as ContentBlock[],
        metadata: (d.metadata as Record<string, string> | null) ?? null,
        status: 'queued',
        attempt: 1,
        output: { parts: [] },
        error: null,
        created_at: ev.created_at,
        completed_at: null,
      });
      session.last_message_id = id;
      session.last_message_status = 'queued';
      break;
    }
    case 'message.status_changed':
      applyMessageStatus(session, messages, ev);
      break;
    case 'session.status_changed':
      session.status = d.to as SessionStatus;
      break;
    case 'assistant.message_completed': {
      const m = messages.get(ev.message_id!);
      if (m) m.output = { parts: [...m.output.parts, ...((d.output as { parts: OutputPart[] }).parts ?? [])] };
      break;
    }
    default:
      break;
  }
}

function applyMessageStatus(session: SessionState, messages: Map<string, MessageState>, ev: EventEnvelope): void {
  const id = ev.message_id!;
  const to = ev.data.to as MessageStatus;
  const m = messages.get(id);
  if (m) {
    m.status = to;
    m.attempt = (ev.data.attempt as number) ?? m.attempt;
    if (TERMINAL_MESSAGE_STATUSES.includes(to)) {
      m.completed_at = ev.created_at;
      m.error = (ev.data.error as string | undefined) ?? null;
    }
  }
  if (session.last_message_id === id) session.last_message_status = to;
  session.queued_message_ids = session.queued_message_ids.filter((q) => q !== id);
  if (to === 'queued') session.queued_message_ids.push(id);
  if (to === 'running') session.running_message_id = id;
  else if (TERMINAL_MESSAGE_STATUSES.includes(to) && session.running_message_id === id) session.running_message_id = null;
}

export function emptySessionState(id: string): SessionState {
  return { id, status: 'idle', last_sequence: 0, last_message_id: null, last_message_status: null, running_message_id: null, queued_message_ids: [], recent_commands: [] };
}

export const RECENT_COMMANDS = 200;

/** Remembers that `commandId` produced the events starting at `firstSequence`. */
export function noteCommand(session: SessionState, commandId: string, firstSequence: number): void {
  if (session.recent_commands.some((c) => c.id === commandId)) return;
  session.recent_commands.push({ id: commandId, seq: firstSequence });
  if (session.recent_commands.length > RECENT_COMMANDS) session.recent_commands.splice(0, session.recent_commands.length - RECENT_COMMANDS);
}
