import type { IdempotencyStore } from '../../store/idempotency.js';
import type { LedgerStore } from '../../store/ledger.js';
import type { MessageStore } from '../../store/messages.js';
import type { SessionStore } from '../../store/sessions.js';
import type { SessionDoc } from '../../domain/views/session.js';

export interface SessionPurgeStores {
  sessions: SessionStore;
  ledger: LedgerStore;
  messages: MessageStore;
  idempotency: IdempotencyStore;
}

/** The Idempotency-Key scope of a session's events endpoint. */
export function sessionIdempotencyScope(sessionId: string): string {
  return `session:${sessionId}`;
}

/** A message is running or waiting its turn: deleting now would drop work in flight. */
export function sessionBusy(s: Pick<SessionDoc, 'running_message_id' | 'queued_message_ids'>): boolean {
  return s.running_message_id !== null || s.queued_message_ids.length > 0;
}

/**
 * Deletes a session and everything recorded under it. The session record
 * goes first: every read path starts from it, so the session is gone for
 * clients at once, and a crash part-way leaves only unreachable rows.
 * Usage records stay: they are the organization's account of model calls.
 */
export async function purgeSession(stores: SessionPurgeStores, orgId: string, sessionId: string): Promise<void> {
  await stores.sessions.remove(orgId, sessionId);
  await Promise.all([stores.ledger.removeSession(sessionId), stores.messages.removeSession(sessionId), stores.idempotency.removeScope(sessionIdempotencyScope(sessionId))]);
}
