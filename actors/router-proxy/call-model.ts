import { TERMINAL_MESSAGE_STATUSES, type MessageState } from '../../src/domain/ledger.js';
import type { AgentVersionDoc } from '../../src/store/agents.js';
import type { SessionDoc } from '../../src/store/sessions.js';
import type { ModelCall, ModelResult } from '../session/messages.js';
import { CANCELLED, callProvider, callRouter, type ProviderDeps } from './providers.js';
import { quotesToolResults, scriptedResponse } from './scripted.js';

export interface ModelCallDeps extends ProviderDeps {
  session(id: string): Promise<SessionDoc | null>;
  version(orgId: string, id: string): Promise<AgentVersionDoc | null>;
  message(orgId: string, sessionId: string, id: string): Promise<MessageState | null>;
}

/**
 * Makes one model call for a session's message, with the adapter its llm
 * option names. The call names the session's version and option, so the
 * scripted provider needs no session read (only the message, when its script
 * quotes tool results); real providers read the session for its keys and history.
 */
export async function callModel(deps: ModelCallDeps, call: ModelCall, signal?: AbortSignal): Promise<ModelResult> {
  let session: SessionDoc | null = null;
  const loadSession = async () => (session ??= await deps.session(call.session_id));
  const versionId = call.version_id ?? (await loadSession())?.version_id;
  const llmId = call.llm_id ?? (await loadSession())?.llm_id;
  if (!versionId || !llmId) return { ok: false, error: `Session ${call.session_id} no longer exists.` };
  const version = await deps.version(call.org_id, versionId);
  if (!version) return { ok: false, error: `Agent version ${versionId} no longer exists.` };
  const option = version.llm_options.find((o) => o.id === llmId);
  if (!option) return { ok: false, error: `LLM option ${llmId} is not in version ${version._id}.` };
  if (option.provider === 'scripted') {
    // A script that quotes tool results ({{tool.field}}) needs the message's output so far; others skip the read.
    const script = version.scripts?.[option.id];
    const output = quotesToolResults(script) ? ((await deps.message(call.org_id, call.session_id, call.message_id))?.output.parts ?? []) : [];
    return scriptedResponse(script, call.call_index, output);
  }
  const current = await loadSession();
  if (!current) return { ok: false, error: `Session ${call.session_id} no longer exists.` };
  const message = await deps.message(call.org_id, call.session_id, call.message_id);
  if (!message) return { ok: false, error: `Message ${call.message_id} no longer exists.` };
  // Cancelled before this call started (the abort was published before the actor listened for it).
  if (TERMINAL_MESSAGE_STATUSES.includes(message.status)) return CANCELLED;
  switch (option.provider) {
    case 'openai':
    case 'openai-responses':
    case 'anthropic':
      return callProvider(deps, current, version, option, call, message, signal);
    case 'routing':
      return callRouter(deps, current, version, option, message, signal);
    default:
      return { ok: false, error: `Provider ${String(option.provider)} is not supported.` };
  }
}
