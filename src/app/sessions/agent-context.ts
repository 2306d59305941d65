import { userSchemaProblem } from '../../lib/schemas/validator.js';
import type { AgentVersionDoc } from '../../store/agents.js';
import type { AgentContext } from '../../domain/session/decision.js';
import type { ToolDef } from '../../domain/agent.js';
import type { SessionDoc } from '../../domain/views/session.js';

export const DEFAULT_MAX_TURNS = 10;
export const MAX_ATTEMPTS = 3;

/** Judged with the same Ajv options as publish, so a schema publish accepted never fails a turn. */
function validateOutput(tool: ToolDef, value: unknown): string | null {
  return tool.output_schema ? userSchemaProblem(tool.output_schema, value) : null;
}

/** Agent facts a decision needs, from the session and its (cached) version. */
export function agentContext(session: SessionDoc, version: AgentVersionDoc | null, publicUrl: string, now = new Date()): AgentContext {
  const config = version?.agent_config;
  return {
    org_id: session.org_id,
    agent_id: session.agent_id,
    agent_deleted: session.agent_deleted_at != null,
    batch_id: session.batch_id ?? null,
    ...(session.on_busy ? { default_on_busy: session.on_busy } : {}),
    tools: new Map((version?.tools ?? []).map((t) => [t.name, t])),
    max_turns: config?.max_turns ?? DEFAULT_MAX_TURNS,
    max_attempts: MAX_ATTEMPTS,
    now,
    submit_url: `${publicUrl}/v1/sessions/${session._id}/events`,
    validate_output: validateOutput,
  };
}
