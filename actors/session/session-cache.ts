import { TERMINAL_MESSAGE_STATUSES, type MessageState, type SessionState } from '../../src/domain/ledger.js';
import type { SessionDoc } from '../../src/store/sessions.js';

const MAX_SESSIONS = 20_000;

interface Entry {
  doc: SessionDoc;
  messages: Map<string, MessageState>;
}

/**
 * The last state this worker saved for a session, so the next turn of the
 * same session can skip re-reading it. Valid only while Redis says the
 * session's saved sequence is still the one cached (another worker's turn
 * moves it); anything stale is caught by the ledger's sequence fence, which
 * then catches the state up from the ledger.
 */
export class SessionCache {
  private readonly entries = new Map<string, Entry>();

  /** A private copy, safe to mutate, when the cached state is at `savedSequence`. */
  take(sessionId: string, savedSequence: number | null): Entry | null {
    const e = this.entries.get(sessionId);
    if (!e || savedSequence === null || e.doc.last_sequence !== savedSequence) return null;
    return structuredClone(e);
  }

  /** Keeps the session and the messages it may still act on (running, queued, pending tools). */
  remember(doc: SessionDoc, state: SessionState, messages: Map<string, MessageState>): void {
    const live = new Map([...messages].filter(([, m]) => !TERMINAL_MESSAGE_STATUSES.includes(m.status)));
    const { id: _id, ...projected } = state;
    this.entries.delete(doc._id);
    if (this.entries.size >= MAX_SESSIONS) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(doc._id, structuredClone({ doc: { ...doc, ...projected }, messages: live }));
  }

  forget(sessionId: string): void {
    this.entries.delete(sessionId);
  }
}
