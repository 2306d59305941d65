import type { LlmResponse, OutBlock, StopReason, Usage } from '../../types.js';
import { asArray, newId, type Json, type RoutingInfo } from '../format.js';

export const CHAT_STOP: Record<string, StopReason> = { stop: 'end', length: 'max_tokens', tool_calls: 'tool_use', function_call: 'tool_use', content_filter: 'refusal' };
export const CHAT_FINISH: Record<StopReason, string> = { end: 'stop', max_tokens: 'length', tool_use: 'tool_calls', stop_sequence: 'stop', refusal: 'content_filter' };

export function parseChatResponse(body: Json): LlmResponse {
  const choice = asArray(body.choices)[0] ?? {};
  const msg = (choice.message ?? {}) as Json;
  const blocks: OutBlock[] = [];
  if (typeof msg.content === 'string' && msg.content !== '') blocks.push({ type: 'text', text: msg.content });
  for (const tc of asArray(msg.tool_calls)) {
    const fn = (tc.function ?? {}) as Json;
    blocks.push({ type: 'tool_call', id: String(tc.id), name: String(fn.name), arguments: String(fn.arguments ?? '{}') });
  }
  const usage = (body.usage ?? {}) as Json;
  return {
    id: String(body.id ?? newId('chatcmpl-')),
    model: String(body.model ?? ''),
    blocks,
    stop: CHAT_STOP[String(choice.finish_reason)] ?? 'end',
    usage: chatUsageIn(usage),
  };
}

/** `prompt_tokens` counts cached tokens too, as the canonical count does; `cached_tokens` says how many of them. */
export function chatUsageIn(u: Json): Usage {
  const usage: Usage = { inputTokens: Number(u.prompt_tokens ?? 0), outputTokens: Number(u.completion_tokens ?? 0) };
  const read = Number((u.prompt_tokens_details as Json | null | undefined)?.cached_tokens ?? 0);
  if (read) usage.cacheReadTokens = read;
  return usage;
}

/** Cache writes (Anthropic's) have no field here; they stay in `prompt_tokens` as the ordinary prompt tokens they are to OpenAI. */
export function chatUsage(u: Usage): Json {
  return { prompt_tokens: u.inputTokens, completion_tokens: u.outputTokens, total_tokens: u.inputTokens + u.outputTokens, prompt_tokens_details: { cached_tokens: u.cacheReadTokens ?? 0 } };
}

export function serializeChatResponse(res: LlmResponse, routing: RoutingInfo | null): Json {
  const text = res.blocks.filter((b) => b.type === 'text').map((b) => b.text).join('');
  const calls = res.blocks.flatMap((b) => (b.type === 'tool_call' ? [{ id: b.id, type: 'function', function: { name: b.name, arguments: b.arguments } }] : []));
  const message: Json = { role: 'assistant', content: text === '' && calls.length ? null : text, refusal: null };
  if (calls.length) message.tool_calls = calls;
  const out: Json = {
    id: res.id.startsWith('chatcmpl') ? res.id : `chatcmpl-${res.id}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: routing?.selected_model ?? res.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: CHAT_FINISH[res.stop] }],
    usage: chatUsage(res.usage),
  };
  if (routing) out.service_routing = routing;
  return out;
}
