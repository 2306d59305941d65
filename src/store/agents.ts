import type { Collection, Db } from 'mongodb';
import { parseWellFormed, wellFormedJson } from '../domain/well-formed.js';
import type { PageRequest } from './page.js';
import type { ToolDef } from '../domain/tool-def.js';

/** LLM option of a manifest (DESIGN §8); the first one is the default `llm_id`. */
export interface LlmOption {
  id: string;
  provider: 'openai' | 'openai-responses' | 'anthropic' | 'routing' | 'scripted';
  model?: string;
  base_url?: string;
  api_key_credential?: string;
  router_id?: string;
  /** Archive path of the script file; `scripted` only. */
  script?: string;
  params?: Record<string, unknown>;
  /** Per million tokens; both or neither. */
  input_price?: number;
  output_price?: number;
  currency?: string;
}

export interface ManifestTool {
  name: string;
  /** External: the definition JSON file. Custom: the handler module. */
  path: string;
  kind: 'external' | 'custom';
  timeout_seconds: number;
  /** Custom tools only: optional definition JSON file giving description and input_schema. */
  definition?: string;
}

/** The validated manifest, defaults applied. */
export interface Manifest {
  name: string;
  sdk: 'troupe-js@1';
  entrypoint: string;
  description?: string;
  version?: string;
  /** allowed_domains: absent = any public host (src/domain/allowed-domains.ts). */
  sandbox: { secrets: string[]; internet_access: boolean; allowed_domains?: string[] };
  custom_tools: ManifestTool[];
  llm_options: LlmOption[];
}

export type { ToolDef } from '../domain/tool-def.js';

export interface ScriptToolCall {
  name: string;
  arguments: Record<string, unknown>;
  id?: string;
}

export type ScriptTurn = { text: string } | { tool_calls: ScriptToolCall[] };

export interface Script {
  turns: ScriptTurn[];
}

/** The entrypoint export, read once at publish in the sandbox (docs/agents.md). */
export interface AgentConfig {
  instructions?: string;
  /** Default llm option for new sessions. */
  llm?: string;
  /** Tools offered to the model; all of the manifest's when absent. */
  tools?: string[];
  max_turns?: number;
}

export interface AgentDoc {
  _id: string;
  org_id: string;
  name: string;
  active_version_id: string | null;
  created_at: Date;
  deleted_at: Date | null;
  /** Versions published so far; `$inc`ed to number the next one. */
  version_count: number;
}

export interface AgentVersionDoc {
  _id: string;
  org_id: string;
  agent_id: string;
  snapshot_id: string;
  number: number;
  manifest: Manifest;
  llm_options: LlmOption[];
  tools: ToolDef[];
  /** Keyed by LLM option id; only `scripted` options have one. */
  scripts: Record<string, Script>;
  /** From the entrypoint; absent on versions published before it was read. */
  agent_config?: AgentConfig;
  /** `<file>:<variable>`, as in the manifest. */
  entrypoint: string;
  created_at: Date;
}

/** What a publish computes from the manifest and the archive. */
export type VersionContent = Pick<AgentVersionDoc, 'manifest' | 'llm_options' | 'tools' | 'scripts' | 'entrypoint' | 'agent_config'>;

/**
 * As stored. Manifests, schemas and scripts are user JSON whose keys may start
 * with `$` or contain dots (`$schema`, `$ref`), which MongoDB and FerretDB
 * treat specially; they are kept as one JSON string, well formed (no lone
 * surrogate, src/domain/well-formed.ts), and decoded on read.
 */
interface StoredVersion {
  _id: string;
  org_id: string;
  agent_id: string;
  snapshot_id: string;
  number: number;
  entrypoint: string;
  content_json: string;
  created_at: Date;
}

function decodeVersion(s: StoredVersion): AgentVersionDoc {
  // Well formed on read too: a version stored before its writer was guarded may hold a lone surrogate escape.
  const c = parseWellFormed(s.content_json) as VersionContent;
  return {
    _id: s._id,
    org_id: s.org_id,
    agent_id: s.agent_id,
    snapshot_id: s.snapshot_id,
    number: s.number,
    manifest: c.manifest,
    llm_options: c.llm_options,
    tools: c.tools,
    scripts: c.scripts,
    agent_config: c.agent_config,
    entrypoint: s.entrypoint,
    created_at: s.created_at,
  };
}

/** Agents and their immutable versions; every query is scoped by org. */
export class AgentStore {
  private readonly agents: Collection<AgentDoc>;
  private readonly versions: Collection<StoredVersion>;

  constructor(db: Db) {
    this.agents = db.collection<AgentDoc>('agents');
    this.versions = db.collection<StoredVersion>('agent_versions');
  }

  /** Inserts the agent with its first version already active; the version goes in first so no agent is ever seen without it. */
  async create(agent: { id: string; orgId: string; name: string }, version: { id: string; snapshotId: string; content: VersionContent }): Promise<{ agent: AgentDoc; version: AgentVersionDoc }> {
    const now = new Date();
    const v = await this.insertVersion(agent.orgId, agent.id, version.id, version.snapshotId, 1, version.content, now);
    const doc: AgentDoc = { _id: agent.id, org_id: agent.orgId, name: agent.name, active_version_id: v._id, created_at: now, deleted_at: null, version_count: 1 };
    await this.agents.insertOne(doc);
    return { agent: doc, version: v };
  }

  /** Soft-deleted agents too: existing data stays readable. */
  get(orgId: string, agentId: string): Promise<AgentDoc | null> {
    return this.agents.findOne({ _id: agentId, org_id: orgId });
  }

  /** Live agents in creation order; fetches `limit + 1` for pageOf. */
  list(orgId: string, page: PageRequest): Promise<AgentDoc[]> {
    const filter: Record<string, unknown> = { org_id: orgId, deleted_at: null };
    if (page.after) filter._id = { $gt: page.after };
    return this.agents.find(filter).sort({ _id: 1 }).limit(page.limit + 1).toArray();
  }

  /** Stamps `deleted_at` once; later calls return the record with the first stamp. */
  async softDelete(orgId: string, agentId: string): Promise<AgentDoc | null> {
    await this.agents.updateOne({ _id: agentId, org_id: orgId, deleted_at: null }, { $set: { deleted_at: new Date() } });
    return this.get(orgId, agentId);
  }

  /**
   * Publishes a version of a live agent: null when the agent is unknown or
   * soft-deleted. Numbering comes from an atomic `$inc` on the agent, which is
   * also the liveness check.
   */
  async createVersion(orgId: string, agentId: string, version: { id: string; snapshotId: string; content: VersionContent }, activate: boolean): Promise<AgentVersionDoc | null> {
    const agent = await this.agents.findOneAndUpdate({ _id: agentId, org_id: orgId, deleted_at: null }, { $inc: { version_count: 1 } }, { returnDocument: 'after' });
    if (!agent) return null;
    const v = await this.insertVersion(orgId, agentId, version.id, version.snapshotId, agent.version_count, version.content, new Date());
    if (activate) await this.agents.updateOne({ _id: agentId, org_id: orgId, deleted_at: null }, { $set: { active_version_id: v._id } });
    return v;
  }

  /**
   * Makes an existing version of a live agent the active one; null when the
   * agent is unknown or soft-deleted. Sessions already open keep the version
   * they were created with: it is copied onto them at creation.
   */
  async activate(orgId: string, agentId: string, versionId: string): Promise<AgentDoc | null> {
    return this.agents.findOneAndUpdate({ _id: agentId, org_id: orgId, deleted_at: null }, { $set: { active_version_id: versionId } }, { returnDocument: 'after' });
  }

  async getVersion(orgId: string, versionId: string): Promise<AgentVersionDoc | null> {
    const s = await this.versions.findOne({ _id: versionId, org_id: orgId });
    return s ? decodeVersion(s) : null;
  }

  async listVersions(orgId: string, agentId: string, page: PageRequest): Promise<AgentVersionDoc[]> {
    const filter: Record<string, unknown> = { org_id: orgId, agent_id: agentId };
    if (page.after) filter._id = { $gt: page.after };
    const rows = await this.versions.find(filter).sort({ _id: 1 }).limit(page.limit + 1).toArray();
    return rows.map(decodeVersion);
  }

  /** The version new sessions use; null for an unknown agent or one without a version. */
  async activeVersion(orgId: string, agentId: string): Promise<AgentVersionDoc | null> {
    const agent = await this.get(orgId, agentId);
    if (!agent?.active_version_id) return null;
    return this.getVersion(orgId, agent.active_version_id);
  }

  private async insertVersion(orgId: string, agentId: string, id: string, snapshotId: string, number: number, content: VersionContent, now: Date): Promise<AgentVersionDoc> {
    const stored: StoredVersion = { _id: id, org_id: orgId, agent_id: agentId, snapshot_id: snapshotId, number, entrypoint: content.entrypoint, content_json: wellFormedJson(content), created_at: now };
    await this.versions.insertOne(stored);
    return decodeVersion(stored);
  }
}
