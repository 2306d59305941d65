/** A session as stored (creation facts plus the projected SessionState) and as the API shows it. */
import type { OnBusy } from '../session/on-busy.js';
import type { SessionState } from '../ledger.js';
import type { Sealed } from '../sealed.js';

/** The `sessions` read model: creation facts plus the projected SessionState. */
export interface SessionDoc extends Omit<SessionState, 'id'> {
  _id: string;
  org_id: string;
  agent_id: string;
  version_id: string;
  name: string | null;
  storage_binding_id: string | null;
  llm_id: string;
  internet_access: boolean;
  metadata: Record<string, string>;
  /** Sealed map name → value; never returned. */
  secrets: Sealed | null;
  /** Sealed per-session provider key; never returned, used for model calls only. */
  llm_api_key: Sealed | null;
  batch_id: string | null;
  /** `interactive` sessions' work goes ahead of `batch` sessions'. */
  priority: 'interactive' | 'batch';
  created_at: Date;
  /** The agent's `deleted_at`, copied when it is soft-deleted: the session then takes no new messages. */
  agent_deleted_at?: Date;
  /** What a user message without its own `on_busy` does while the session is busy; absent: `enqueue`. */
  on_busy?: OnBusy;
  /** A total spend budget in USD for the session's model calls; absent: none. */
  budget_usd?: number | null;
  /** The API key that created the session: its budget counts the session's spend. Absent on older sessions. */
  api_key_id?: string | null;
}

export interface SessionView {
  id: string;
  name: string | null;
  agent_id: string;
  version_id: string;
  storage_binding_id: string | null;
  llm_id: string;
  internet_access: boolean;
  status: string;
  last_message_id: string | null;
  last_message_status: string | null;
  created_at: string;
  metadata: Record<string, string>;
  /** The session's default `on_busy` (set at creation), `enqueue` when none was set. */
  on_busy: OnBusy;
  /** The session's total spend budget in USD (set at creation), null when it has none. */
  budget_usd: number | null;
}

export function sessionView(s: SessionDoc): SessionView {
  return {
    id: s._id,
    name: s.name,
    agent_id: s.agent_id,
    version_id: s.version_id,
    storage_binding_id: s.storage_binding_id,
    llm_id: s.llm_id,
    internet_access: s.internet_access,
    status: s.status,
    last_message_id: s.last_message_id,
    last_message_status: s.last_message_status,
    created_at: s.created_at.toISOString(),
    metadata: s.metadata,
    on_busy: s.on_busy ?? 'enqueue',
    budget_usd: s.budget_usd ?? null,
  };
}
