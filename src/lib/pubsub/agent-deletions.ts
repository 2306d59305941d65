/** What DELETE /v1/agents/{id} publishes once the agent's sessions are stamped. */
export interface AgentDeleted {
  agent_id: string;
  deleted_at: string;
}

export function encodeAgentDeleted(agentId: string, deletedAt: Date): string {
  const m: AgentDeleted = { agent_id: agentId, deleted_at: deletedAt.toISOString() };
  return JSON.stringify(m);
}

/** The notice, or null for a message that is not one (never thrown: a stray message marks nothing). */
export function decodeAgentDeleted(raw: string): { agentId: string; deletedAt: Date } | null {
  try {
    const m = JSON.parse(raw) as Partial<AgentDeleted>;
    const at = typeof m.deleted_at === 'string' ? new Date(m.deleted_at) : null;
    if (typeof m.agent_id !== 'string' || !at || Number.isNaN(at.getTime())) return null;
    return { agentId: m.agent_id, deletedAt: at };
  } catch {
    return null;
  }
}
