import type { AgentVersionDoc } from '../../src/store/agents.js';
import type { Item, LlmRequest } from '../../src/lib/llm/types.js';
import type { ModelResult } from '../../src/domain/actors/session.js';
import type { AgentCallResult } from '../../src/domain/session/code-step.js';

const DEFAULT_MAX_TOKENS = 4096;

function text(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v ?? null);
}

/**
 * A code agent's `ctx.model(request)` as the provider adapters take it: `messages` (`{role: user|assistant, content}`)
 * or `input` (one user message), `system` (else the entrypoint's instructions), `tools` (names of the agent's tools,
 * offered to the model by their definitions; none when absent) and `max_tokens`. The conversation is the run's own,
 * not the session's history.
 */
export function agentRequest(version: AgentVersionDoc, request: Record<string, unknown>): LlmRequest {
  const messages = Array.isArray(request.messages) ? (request.messages as Record<string, unknown>[]) : [{ role: 'user', content: request.input ?? '' }];
  const items: Item[] = messages.map((m) => ({ kind: 'message', role: m?.role === 'assistant' ? 'assistant' : 'user', content: [{ type: 'text', text: text(m?.content) }] }));
  const names = Array.isArray(request.tools) ? new Set(request.tools.map(String)) : new Set<string>();
  const tools = version.tools.filter((t) => names.has(t.name)).map((t) => ({ name: t.name, description: t.description ?? undefined, parameters: t.input_schema ?? { type: 'object', properties: {} } }));
  const system = typeof request.system === 'string' ? request.system : version.agent_config?.instructions;
  const maxTokens = Number.isInteger(request.max_tokens) && (request.max_tokens as number) > 0 ? Math.min(request.max_tokens as number, 64_000) : DEFAULT_MAX_TOKENS;
  return { system, items, tools, maxTokens, stream: true };
}

/** What `ctx.model` resolves with (`{text, parts, stop_reason, usage}`), or the error it rejects with. */
export function agentCallResult(result: ModelResult): AgentCallResult {
  // Whether it is worth another try travels with the failure: the session retries it as the built-in loop would (code-agent.ts).
  if (!result.ok) return { ok: false, error: result.error, ...(result.retryable ? { retryable: true, retry_after_ms: result.retry_after_ms } : {}) };
  const joined = result.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
  return { ok: true, output: { text: joined, parts: result.parts, stop_reason: result.stop_reason, usage: result.usage } };
}
