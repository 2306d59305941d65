import type { ContentBlock, MessageState } from '../../domain/ledger.js';
import { wellFormedJson } from '../../domain/well-formed.js';
import type { AgentVersionDoc } from '../../store/agents.js';
import { envelope, toEventDoc, type EventDoc } from '../../store/ledger.js';
import { agentContext } from '../sessions/agent-context.js';
import { decide } from '../../domain/session/decide.js';
import { userMessageCommandId, type Effect, type SessionCommand } from '../../domain/actors/session.js';
import { applyEvent, emptySessionState, noteCommand } from '../../domain/session/projection.js';
import type { MessageDoc } from '../../domain/views/message.js';
import type { SessionDoc } from '../../domain/views/session.js';

/** A new session's first turn, ready to be written in bulk with many others. */
export interface FirstTurn {
  /** The session document, already projected to the state after the turn. */
  session: SessionDoc;
  events: EventDoc[];
  message: MessageDoc;
  /** The decision's effects, for the caller to hand off once the rows are stored. */
  effects: Effect[];
}

function messageDoc(orgId: string, m: MessageState): MessageDoc {
  const { id, output, ...rest } = m;
  return { _id: id, ...rest, org_id: orgId, output_json: wellFormedJson(output) };
}

/**
 * The first `user.message` of a session that does not exist yet (batch
 * creation), decided by the actor's own `decide` and projected by its own
 * `applyEvent`. A new session has no history and no actor, so nothing can
 * race it: the caller writes the rows in bulk, the session document last,
 * and hands off the effects (a deferred `message.start`, so batch children
 * start behind interactive work).
 */
export function firstTurn(doc: SessionDoc, version: AgentVersionDoc, publicUrl: string, messageId: string, content: ContentBlock[], now: Date): FirstTurn {
  const state = emptySessionState(doc._id);
  const messages = new Map<string, MessageState>();
  const command: SessionCommand = { kind: 'user.message', command_id: userMessageCommandId(messageId), message_id: messageId, content, metadata: null, start: 'deferred' };
  const decision = decide({ session: state, messages, agent: agentContext(doc, version, publicUrl, now) }, command);
  const events = decision.events.map((e, i) => toEventDoc(doc.org_id, doc._id, i + 1, e, now, i === 0 ? { command_id: command.command_id, effects: decision.effects, reply_offset: decision.reply.event_index } : {}));
  for (const ev of events) applyEvent(state, messages, envelope(ev));
  noteCommand(state, command.command_id, 1);
  const { id: _id, ...projected } = state;
  return { session: { ...doc, ...projected }, events, message: messageDoc(doc.org_id, messages.get(messageId)!), effects: decision.effects };
}
