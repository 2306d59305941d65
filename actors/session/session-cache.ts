import { TERMINAL_MESSAGE_STATUSES, type MessageState, type SessionState } from '../../src/domain/ledger.js';
import type { SessionDoc } from '../../src/domain/views/session.js';

const MAX_SESSIONS = 20_000;
/** Soft-deleted agents remembered, so a copy saved by a turn that loaded its session before the notice gets the stamp too. */
const MAX_DELETED_AGENTS = 10_000;
/**
 * How long a copy is trusted. A turn's follow-ups (the model's answer, tool
 * results) come within seconds; a session deleted by another worker must not
 * be written to from an old copy (the ledger has no rows left to fence with).
 */
const TRUST_MS = 30_000;

interface Entry {
  doc: SessionDoc;
  messages: Map<string, MessageState>;
  saved_at: number;
}

/**
 * The last state this worker saved for a session, so the next turn of the
 * same session can skip re-reading it. It may be stale (another worker ran a
 * turn of the session since): the ledger's sequence fence catches that on
 * append, and the turn then catches the state up from the ledger. Copies
 * older than TRUST_MS are dropped.
 */
export class SessionCache {
  private readonly entries = new Map<string, Entry>();
  private readonly deletedAgents = new Map<string, Date>();

  /** A private copy, safe to mutate. */
  take(sessionId: string, now = Date.now()): Entry | null {
    const e = this.entries.get(sessionId);
    if (!e || now - e.saved_at > TRUST_MS) return null;
    return structuredClone(e);
  }

  /** Keeps the session and the messages it may still act on (running, queued, pending tools). */
  remember(doc: SessionDoc, state: SessionState, messages: Map<string, MessageState>): void {
    const live = new Map([...messages].filter(([, m]) => !TERMINAL_MESSAGE_STATUSES.includes(m.status)));
    const { id: _id, ...projected } = state;
    const deletedAt = doc.agent_deleted_at ?? this.deletedAgents.get(doc.agent_id);
    this.entries.delete(doc._id);
    if (this.entries.size >= MAX_SESSIONS) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(doc._id, structuredClone({ doc: { ...doc, ...projected, ...(deletedAt ? { agent_deleted_at: deletedAt } : {}) }, messages: live, saved_at: Date.now() }));
  }

  /**
   * The agent was soft-deleted (its sessions stamped in MongoDB after these
   * copies were read): the copies of its sessions get the same stamp, so
   * their next turn refuses new messages as a fresh read would.
   */
  agentDeleted(agentId: string, deletedAt: Date): void {
    this.deletedAgents.delete(agentId);
    if (this.deletedAgents.size >= MAX_DELETED_AGENTS) this.deletedAgents.delete(this.deletedAgents.keys().next().value!);
    this.deletedAgents.set(agentId, deletedAt);
    for (const e of this.entries.values()) if (e.doc.agent_id === agentId) e.doc.agent_deleted_at ??= deletedAt;
  }

  forget(sessionId: string): void {
    this.entries.delete(sessionId);
  }
}
