import type { MessageState } from '../../src/domain/ledger.js';
import type { AgentVersionDoc } from '../../src/store/agents.js';
import type { SessionDoc } from '../../src/store/sessions.js';
import type { ModelCall, ModelResult } from '../session/messages.js';
import { callProvider, callRouter, type ProviderDeps } from './providers.js';
import { quotesToolResults, scriptedResponse } from './scripted.js';

export interface ModelCallDeps extends ProviderDeps {
  session(id: string): Promise<SessionDoc | null>;
  version(orgId: string, id: string): Promise<AgentVersionDoc | null>;
  message(orgId: string, sessionId: string, id: string): Promise<MessageState | null>;
}

/** Makes one model call for a session's message, with the adapter its llm option names. */
export async function callModel(deps: ModelCallDeps, call: ModelCall): Promise<ModelResult> {
  const session = await deps.session(call.session_id);
  if (!session) return { ok: false, error: `Session ${call.session_id} no longer exists.` };
  const version = await deps.version(call.org_id, session.version_id);
  if (!version) return { ok: false, error: `Agent version ${session.version_id} no longer exists.` };
  const option = version.llm_options.find((o) => o.id === session.llm_id);
  if (!option) return { ok: false, error: `LLM option ${session.llm_id} is not in version ${version._id}.` };
  switch (option.provider) {
    case 'scripted': {
      // A script that quotes tool results ({{tool.field}}) needs the message's output so far; others skip the read.
      const script = version.scripts?.[option.id];
      const current = quotesToolResults(script) ? await deps.message(call.org_id, call.session_id, call.message_id) : null;
      return scriptedResponse(script, call.call_index, current?.output.parts ?? []);
    }
    case 'openai':
    case 'openai-responses':
    case 'anthropic': {
      const current = await deps.message(call.org_id, call.session_id, call.message_id);
      if (!current) return { ok: false, error: `Message ${call.message_id} no longer exists.` };
      return callProvider(deps, session, version, option, call, current);
    }
    case 'routing': {
      const current = await deps.message(call.org_id, call.session_id, call.message_id);
      if (!current) return { ok: false, error: `Message ${call.message_id} no longer exists.` };
      return callRouter(deps, session, version, option, current);
    }
    default:
      return { ok: false, error: `Provider ${String(option.provider)} is not supported.` };
  }
}
