import type { AgentVersionDoc } from '../../src/store/agents.js';
import type { SessionDoc } from '../../src/store/sessions.js';
import type { ModelCall, ModelResult } from '../session/messages.js';
import { scriptedResponse } from './scripted.js';

export interface ModelCallDeps {
  session(id: string): Promise<SessionDoc | null>;
  version(orgId: string, id: string): Promise<AgentVersionDoc | null>;
}

/**
 * Makes one model call for a session's message. Provider adapters plug in
 * here by `provider`; this build ships `scripted`.
 */
export async function callModel(deps: ModelCallDeps, call: ModelCall): Promise<ModelResult> {
  const session = await deps.session(call.session_id);
  if (!session) return { ok: false, error: `Session ${call.session_id} no longer exists.` };
  const version = await deps.version(call.org_id, session.version_id);
  if (!version) return { ok: false, error: `Agent version ${session.version_id} no longer exists.` };
  const option = version.llm_options.find((o) => o.id === session.llm_id);
  if (!option) return { ok: false, error: `LLM option ${session.llm_id} is not in version ${version._id}.` };
  switch (option.provider) {
    case 'scripted':
      return scriptedResponse(version.scripts?.[option.id], call.call_index);
    default:
      return { ok: false, error: `Provider ${option.provider} is not available in this build yet; use the scripted provider.` };
  }
}
