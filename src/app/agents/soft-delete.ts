import type { RedisClient } from '../../lib/redis/connection.js';
import type { RedisKeys } from '../../lib/redis/keys.js';
import { publish } from '../../lib/redis/publish.js';
import { encodeAgentDeleted } from '../../lib/pubsub/agent-deletions.js';
import type { AgentDoc } from '../../store/agents.js';
import type { Stores } from '../../store/stores.js';

export interface AgentDeletionDeps {
  stores: Pick<Stores, 'agents' | 'sessions'>;
  redis: RedisClient;
  keys: RedisKeys;
}

/**
 * `DELETE /v1/agents/{id}` (spec: the agent's sessions are kept, new work
 * against it is rejected): stamps the agent, then its sessions, whose turns
 * read the stamp from the session they load anyway, then tells the workers,
 * whose in-memory copies of sessions were loaded before it. Every step is
 * idempotent, so a repeated call finishes one that failed part-way.
 */
export async function softDeleteAgent(deps: AgentDeletionDeps, orgId: string, agentId: string): Promise<AgentDoc | null> {
  const doc = await deps.stores.agents.softDelete(orgId, agentId);
  if (!doc?.deleted_at) return doc;
  await deps.stores.sessions.markAgentDeleted(orgId, agentId, doc.deleted_at);
  await publish(deps.redis, deps.keys.agentDeletions(), encodeAgentDeleted(agentId, doc.deleted_at));
  return doc;
}
