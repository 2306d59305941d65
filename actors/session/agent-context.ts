import { compile } from '../../src/schemas/validator.js';
import type { AgentVersionDoc, ToolDef } from '../../src/store/agents.js';
import type { SessionDoc } from '../../src/store/sessions.js';
import type { AgentContext } from './decision.js';

export const DEFAULT_MAX_TURNS = 10;
export const MAX_ATTEMPTS = 3;
const CACHE_MAX = 1000;

/**
 * Versions are immutable, so each worker keeps the ones it has used, with
 * their output validators compiled once; a turn then costs no extra read.
 */
export class VersionCache {
  private readonly versions = new Map<string, AgentVersionDoc>();

  constructor(private readonly load: (orgId: string, id: string) => Promise<AgentVersionDoc | null>) {}

  async get(orgId: string, id: string): Promise<AgentVersionDoc | null> {
    const hit = this.versions.get(id);
    if (hit && hit.org_id === orgId) return hit;
    const v = await this.load(orgId, id);
    if (v) {
      if (this.versions.size >= CACHE_MAX) this.versions.delete(this.versions.keys().next().value!);
      this.versions.set(id, v);
    }
    return v;
  }
}

function validateOutput(tool: ToolDef, value: unknown): string | null {
  if (!tool.output_schema) return null;
  const validate = compile(tool.output_schema) as ((v: unknown) => boolean) & { errors?: { instancePath: string; message?: string }[] | null };
  if (validate(value)) return null;
  const e = validate.errors?.[0];
  return e ? `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}` : 'invalid';
}

/** Agent facts a decision needs, from the session and its (cached) version. */
export function agentContext(session: SessionDoc, version: AgentVersionDoc | null, publicUrl: string, now = new Date()): AgentContext {
  const config = version?.agent_config;
  return {
    org_id: session.org_id,
    agent_id: session.agent_id,
    batch_id: session.batch_id ?? null,
    tools: new Map((version?.tools ?? []).map((t) => [t.name, t])),
    max_turns: config?.max_turns ?? DEFAULT_MAX_TURNS,
    max_attempts: MAX_ATTEMPTS,
    now,
    submit_url: `${publicUrl}/v1/sessions/${session._id}/events`,
    validate_output: validateOutput,
  };
}
