import type { RedisClient } from '../../lib/redis/connection.js';
import type { RedisKeys } from '../../lib/redis/keys.js';
import { publish } from '../../lib/redis/publish.js';
import { encodeAgentDeleted } from '../../lib/pubsub/agent-deletions.js';
import type { ScheduleClock } from '../schedules/clock.js';
import type { AgentDoc } from '../../store/agents.js';
import type { Stores } from '../../store/stores.js';

export interface AgentDeletionDeps {
  stores: Pick<Stores, 'agents' | 'sessions' | 'schedules'>;
  redis: RedisClient;
  keys: RedisKeys;
  scheduleClock: ScheduleClock;
}

/** Removes the job schedulers of the agent's schedules, a page at a time; the records stay readable. */
async function stopSchedules(deps: AgentDeletionDeps, orgId: string, agentId: string): Promise<void> {
  let after: string | null = null;
  for (;;) {
    const page = await deps.stores.schedules.listByAgent(orgId, agentId, 100, after);
    for (const s of page.slice(0, 100)) await deps.scheduleClock.disarm(s._id);
    if (page.length <= 100) return;
    after = page[99]._id;
  }
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
  // Its schedules stop now; a tick already queued finds the agent deleted and records itself skipped (run-tick.ts).
  await stopSchedules(deps, orgId, agentId);
  return doc;
}
