import { ConflictError, NotFoundError } from '../../src/domain/errors.js';
import { sessionBusy } from '../../src/app/sessions/delete-session.js';
import { encodeSessionEvents, SESSION_DELETED } from '../../src/lib/pubsub/session-events.js';
import type { Outcome } from '../runtime/actor.js';
import type { TurnDeps } from './turn.js';

export interface SessionDeleted {
  id: string;
  deleted: true;
}

/**
 * Deletes the session as one of its own turns, so no turn of it runs at the
 * same time and nothing is appended after the purge. Refused while a message
 * is running or queued (the web node cancels them first on `force`). Later
 * commands for the session (a model answer, a tool result, a deadline) find
 * no session and end as 404s.
 */
export async function deleteSessionTurn(deps: TurnDeps, sessionId: string): Promise<Outcome> {
  const doc = await deps.sessions.byId(sessionId);
  if (!doc) throw new NotFoundError('session', sessionId);
  if (sessionBusy(doc)) throw new ConflictError(`Session ${sessionId} has a message running or queued; cancel it first or delete with ?force=true.`, 'session_busy');
  await deps.purge(doc.org_id, sessionId);
  deps.cache.forget(sessionId);
  const reply: SessionDeleted = { id: sessionId, deleted: true };
  return { reply, publish: [{ channel: deps.eventsChannel(sessionId), payload: encodeSessionEvents([{ type: SESSION_DELETED, session_id: sessionId }]) }] };
}
