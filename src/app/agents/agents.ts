import { NotFoundError } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import type { AgentDoc, AgentVersionDoc } from '../../store/agents.js';
import type { Stores } from '../../store/stores.js';
import { publishFromSnapshot, type PublishInput, type PublishPlace } from './publish-from-snapshot.js';
import { softDeleteAgent, type AgentDeletionDeps } from './soft-delete.js';

/**
 * The agent use cases behind `/v1/agents`: each one runs the checks in the
 * order the API documents and throws the domain error the client sees; the
 * route only parses the request and shapes the answer.
 */
export interface AgentServicePorts {
  stores: Pick<Stores, 'agents' | 'snapshots' | 'blobs'>;
  place: PublishPlace;
}

/** A version together with the agent's active version id, which its view needs. */
export interface VersionOfAgent {
  version: AgentVersionDoc;
  activeVersionId: string | null;
}

/** Any agent of the org, soft-deleted ones included (they stay readable). */
export async function readAgent(agents: Pick<Stores['agents'], 'get'>, orgId: string, agentId: string): Promise<AgentDoc> {
  const doc = await agents.get(orgId, agentId);
  if (!doc) throw new NotFoundError('agent', agentId);
  return doc;
}

/** A version, only through the agent it belongs to, so another agent's version id reads as missing. */
async function versionOf(agents: Pick<Stores['agents'], 'getVersion'>, orgId: string, agentId: string, versionId: string): Promise<AgentVersionDoc> {
  const v = await agents.getVersion(orgId, versionId);
  if (!v || v.agent_id !== agentId) throw new NotFoundError('version', versionId);
  return v;
}

/** An agent that takes new work: a soft-deleted one is refused as missing (spec: 404). */
async function liveAgent(agents: Pick<Stores['agents'], 'get'>, orgId: string, agentId: string): Promise<AgentDoc> {
  const live = await agents.get(orgId, agentId);
  if (!live || live.deleted_at) throw new NotFoundError('agent', agentId);
  return live;
}

/** `POST /v1/agents`: the agent and its first version, published from a ready snapshot. */
export async function createAgent(ports: AgentServicePorts, orgId: string, input: PublishInput & { name: string }): Promise<AgentDoc> {
  const { stores } = ports;
  const created = await publishFromSnapshot(stores, ports.place, orgId, input, (snapshotId, content) =>
    stores.agents.create({ id: newId('agent'), orgId, name: input.name }, { id: newId('version'), snapshotId, content }),
  );
  return created!.agent;
}

/** `POST /v1/agents/{id}/versions`: a new version of a live agent, activated unless `activate` is false. */
export async function publishVersion(ports: AgentServicePorts, orgId: string, agentId: string, input: PublishInput & { activate: boolean }): Promise<VersionOfAgent> {
  const { stores } = ports;
  const live = await liveAgent(stores.agents, orgId, agentId);
  const version = await publishFromSnapshot(stores, ports.place, orgId, input, (snapshotId, content) =>
    stores.agents.createVersion(orgId, agentId, { id: newId('version'), snapshotId, content }, input.activate),
  );
  // Deleted between the check above and the write: the version was not stored.
  if (!version) throw new NotFoundError('agent', agentId);
  return { version, activeVersionId: input.activate ? version._id : live.active_version_id };
}

/** `GET /v1/agents/{id}/versions/{version_id}`: also of a soft-deleted agent. */
export async function readVersion(agents: Pick<Stores['agents'], 'get' | 'getVersion'>, orgId: string, agentId: string, versionId: string): Promise<VersionOfAgent> {
  const agent = await readAgent(agents, orgId, agentId);
  return { version: await versionOf(agents, orgId, agent._id, versionId), activeVersionId: agent.active_version_id };
}

/** `POST /v1/agents/{id}/versions/{version_id}/activate`: a soft-deleted agent takes no new work, activation included. */
export async function activateVersion(agents: Pick<Stores['agents'], 'get' | 'getVersion' | 'activate'>, orgId: string, agentId: string, versionId: string): Promise<VersionOfAgent> {
  await liveAgent(agents, orgId, agentId);
  const version = await versionOf(agents, orgId, agentId, versionId);
  const agent = await agents.activate(orgId, agentId, version._id);
  if (!agent) throw new NotFoundError('agent', agentId);
  return { version, activeVersionId: agent.active_version_id };
}

/** `DELETE /v1/agents/{id}`: repeat calls keep the first deleted_at (src/app/agents/soft-delete.ts). */
export async function deleteAgent(deps: AgentDeletionDeps, orgId: string, agentId: string): Promise<AgentDoc> {
  const doc = await softDeleteAgent(deps, orgId, agentId);
  if (!doc) throw new NotFoundError('agent', agentId);
  return doc;
}
