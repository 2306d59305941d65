import { ExpiringCache } from '../../domain/expiring-cache.js';
import type { SessionDoc } from '../../domain/views/session.js';

/** A session's creation facts, which never change: whose it is and at which priority its work runs. */
export interface SessionHead {
  _id: string;
  org_id: string;
  priority: 'interactive' | 'batch';
  /** The session's budget and the key that created it (budgets check them at intake). */
  budget_usd?: number | null;
  api_key_id?: string | null;
}

/** Sessions live for hours; the bound is memory (about 100 bytes a head), and a full cache is cleared. */
const TTL_MS = 30 * 60_000;
const MAX_HEADS = 50_000;

/**
 * The heads of the sessions a web process created or read, so that a command
 * to a session (a user message, a tool result, a cancel) does not read the
 * session first: the actor loads it anyway, answers 404 for one deleted since,
 * and acts only on the id of a session the caller's org owns. Nothing mutable
 * is kept, so there is nothing to invalidate.
 */
export class SessionHeads {
  private readonly heads = new ExpiringCache<SessionHead>(TTL_MS, MAX_HEADS);

  /** The head of the org's session `id` if this process knows it; another org's session is never returned. */
  get(orgId: string, id: string): SessionHead | null {
    const head = this.heads.get(id);
    return head && head.org_id === orgId ? head : null;
  }

  remember(s: Pick<SessionDoc, '_id' | 'org_id' | 'priority' | 'budget_usd' | 'api_key_id'>): void {
    this.heads.set(s._id, { _id: s._id, org_id: s.org_id, priority: s.priority ?? 'interactive', ...(s.budget_usd ? { budget_usd: s.budget_usd } : {}), ...(s.api_key_id ? { api_key_id: s.api_key_id } : {}) });
  }
}
