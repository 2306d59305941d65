import { ConflictError, InvalidRequestError, NotFoundError } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import type { SecretBox } from '../../lib/crypto/secret-box.js';
import { llmKeyAad, secretsAad } from '../../lib/crypto/session-secrets.js';
import type { AgentStore, AgentVersionDoc } from '../../store/agents.js';
import type { SessionDoc } from '../../domain/views/session.js';
import type { OnBusy } from '../../domain/session/on-busy.js';

export interface SessionInput {
  name?: string | null;
  storage_binding_id?: string | null;
  metadata?: Record<string, string>;
  secrets?: Record<string, string>;
  llm_api_key?: string;
  internet_access?: boolean;
  llm_id?: string;
  on_busy?: OnBusy;
  budget_usd?: number;
}

export interface SessionPlacement {
  priority: 'interactive' | 'batch';
  batch_id?: string | null;
  version_id?: string;
  /** The key that creates it, whose budget its spend counts against. */
  api_key_id?: string;
}

/** Resolves the version a new session runs: the one named, else the agent's active one. */
export async function versionFor(agents: AgentStore, orgId: string, agentId: string, versionId?: string): Promise<AgentVersionDoc> {
  const agent = await agents.get(orgId, agentId);
  // A soft-deleted agent takes no new work (spec: 404).
  if (!agent || agent.deleted_at) throw new NotFoundError('agent', agentId);
  const id = versionId ?? agent.active_version_id;
  if (!id) throw new ConflictError(`Agent ${agentId} has no active version.`, 'no_active_version');
  const version = await agents.getVersion(orgId, id);
  if (!version || version.agent_id !== agentId) throw new NotFoundError('version', id);
  return version;
}

/**
 * Builds a new session document (not yet stored). Secrets and the provider
 * key are sealed here, so plaintext never reaches a store or a log.
 */
/** `id`: one chosen in advance (recorded under an idempotency claim before the session exists); else a new one. */
export function buildSession(box: SecretBox, orgId: string, version: AgentVersionDoc, input: SessionInput, placement: SessionPlacement, id = newId('session')): SessionDoc {
  const llmId = input.llm_id ?? version.agent_config?.llm ?? version.llm_options[0]?.id;
  if (!llmId || !version.llm_options.some((o) => o.id === llmId)) {
    throw new InvalidRequestError(`llm_id ${JSON.stringify(input.llm_id)} is not an llm option of version ${version._id}; options: ${version.llm_options.map((o) => o.id).join(', ')}.`, 'llm_id');
  }
  const secrets = input.secrets && Object.keys(input.secrets).length ? box.seal(JSON.stringify(input.secrets), secretsAad(id)) : null;
  return {
    _id: id,
    org_id: orgId,
    agent_id: version.agent_id,
    version_id: version._id,
    name: input.name ?? null,
    storage_binding_id: input.storage_binding_id ?? null,
    llm_id: llmId,
    internet_access: input.internet_access ?? version.manifest.sandbox?.internet_access ?? false,
    metadata: input.metadata ?? {},
    secrets,
    llm_api_key: input.llm_api_key ? box.seal(input.llm_api_key, llmKeyAad(id)) : null,
    batch_id: placement.batch_id ?? null,
    priority: placement.priority,
    ...(input.on_busy ? { on_busy: input.on_busy } : {}),
    ...(input.budget_usd ? { budget_usd: input.budget_usd } : {}),
    ...(placement.api_key_id ? { api_key_id: placement.api_key_id } : {}),
    created_at: new Date(),
    status: 'idle',
    last_sequence: 0,
    last_message_id: null,
    last_message_status: null,
    running_message_id: null,
    queued_message_ids: [],
    recent_commands: [],
  };
}
