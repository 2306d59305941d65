import type { Effect } from '../../actors/session/messages.js';
import { applyEvent, emptySessionState, noteCommand } from '../../actors/session/projection.js';
import { SYSTEM_ACTOR, USER_ACTOR, type ContentBlock, type MessageState, type NewEvent } from '../domain/ledger.js';
import { envelope, toEventDoc, type EventDoc } from '../store/ledger.js';
import type { MessageDoc } from '../store/messages.js';
import type { SessionDoc } from '../store/sessions.js';

/** A new session's first turn, decided here instead of by its actor, ready to be written in bulk. */
export interface FirstTurn {
  /** The session document, already projected to the state after the turn. */
  session: SessionDoc;
  events: EventDoc[];
  message: MessageDoc;
}

function messageDoc(orgId: string, m: MessageState): MessageDoc {
  const { id, output, ...rest } = m;
  return { _id: id, ...rest, org_id: orgId, output_json: JSON.stringify(output) };
}

/**
 * The events of a `user.message` turn on an idle, empty session, exactly as
 * the session actor decides them (actors/session/decide.ts): the message,
 * its null → queued status, the session's idle → running, and a
 * `message.start` hand-off that starts it.
 */
function userMessageTurn(messageId: string, content: ContentBlock[]): { events: NewEvent[]; effects: Effect[] } {
  const platform = (type: NewEvent['type'], mid: string | null, data: Record<string, unknown>): NewEvent => ({ type, message_id: mid, source: 'platform', actor: SYSTEM_ACTOR, data });
  return {
    events: [
      { type: 'user.message', message_id: messageId, source: 'user', actor: USER_ACTOR, data: { content, metadata: null, message_id: messageId } },
      platform('message.status_changed', messageId, { message_id: messageId, from: null, to: 'queued', attempt: 1 }),
      platform('session.status_changed', null, { from: 'idle', to: 'running' }),
    ],
    effects: [{ kind: 'session.command', command: { kind: 'message.start', command_id: `start-${messageId}`, message_id: messageId } }],
  };
}

/**
 * A new session's first turn, decided here rather than by its actor: a new
 * session has no actor and no history, so nothing can race it. The session
 * state is projected with the actor's own `applyEvent`, so the document is
 * inserted already consistent with its ledger (last_sequence 3, running,
 * the message queued, the command noted against redelivery). The caller
 * writes the rows in bulk and wakes the actors with `start-<message_id>`.
 */
export function firstTurn(doc: SessionDoc, messageId: string, content: ContentBlock[], now: Date): FirstTurn {
  const state = emptySessionState(doc._id);
  const messages = new Map<string, MessageState>();
  const commandId = `um-${messageId}`;
  const turn = userMessageTurn(messageId, content);
  const events = turn.events.map((e, i) => toEventDoc(doc.org_id, doc._id, i + 1, e, now, i === 0 ? { command_id: commandId, effects: turn.effects } : {}));
  for (const ev of events) applyEvent(state, messages, envelope(ev));
  noteCommand(state, commandId, 1);
  const { id: _id, ...projected } = state;
  return { session: { ...doc, ...projected }, events, message: messageDoc(doc.org_id, messages.get(messageId)!) };
}
