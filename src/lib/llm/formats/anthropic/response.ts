import { uncachedInput, type LlmResponse, type OutBlock, type StopReason, type Usage } from '../../types.js';
import { asArray, newId, type Json, type RoutingInfo } from '../format.js';

export const ANTHROPIC_STOP: Record<string, StopReason> = { end_turn: 'end', max_tokens: 'max_tokens', tool_use: 'tool_use', stop_sequence: 'stop_sequence', refusal: 'refusal', pause_turn: 'end', model_context_window_exceeded: 'max_tokens' };
export const ANTHROPIC_STOP_OUT: Record<StopReason, string> = { end: 'end_turn', max_tokens: 'max_tokens', tool_use: 'tool_use', stop_sequence: 'stop_sequence', refusal: 'refusal' };

export function parseAnthropicResponse(body: Json): LlmResponse {
  const blocks: OutBlock[] = [];
  for (const b of asArray(body.content)) {
    if (b.type === 'text') blocks.push({ type: 'text', text: String(b.text ?? '') });
    else if (b.type === 'tool_use') blocks.push({ type: 'tool_call', id: String(b.id), name: String(b.name), arguments: JSON.stringify(b.input ?? {}) });
    // thinking blocks are the model's scratchpad; other formats have no place for them.
  }
  const u = (body.usage ?? {}) as Json;
  return {
    id: String(body.id ?? newId('msg_')),
    model: String(body.model ?? ''),
    blocks,
    stop: ANTHROPIC_STOP[String(body.stop_reason)] ?? 'end',
    usage: anthropicUsageIn(u),
  };
}

/** Anthropic's `input_tokens` leaves out what was read from or written to the cache; the canonical count has all. */
export function anthropicUsageIn(u: Json): Usage {
  const read = Number(u.cache_read_input_tokens ?? 0);
  const write = Number(u.cache_creation_input_tokens ?? 0);
  const usage: Usage = { inputTokens: Number(u.input_tokens ?? 0) + read + write, outputTokens: Number(u.output_tokens ?? 0) };
  if (read) usage.cacheReadTokens = read;
  if (write) usage.cacheWriteTokens = write;
  return usage;
}

export function anthropicUsageOut(u: Usage): Json {
  return { input_tokens: uncachedInput(u), cache_creation_input_tokens: u.cacheWriteTokens ?? 0, cache_read_input_tokens: u.cacheReadTokens ?? 0, output_tokens: u.outputTokens };
}

export function anthropicBlock(b: OutBlock): Json {
  if (b.type === 'text') return { type: 'text', text: b.text };
  let input: unknown = {};
  try {
    input = JSON.parse(b.arguments || '{}');
  } catch {
    input = {};
  }
  return { type: 'tool_use', id: b.id, name: b.name, input };
}

/** `service_routing` rides in the message's `metadata` object (the messages format has no other extension point). */
export function serializeAnthropicResponse(res: LlmResponse, routing: RoutingInfo | null): Json {
  const out: Json = {
    id: res.id.startsWith('msg_') ? res.id : `msg_${res.id}`,
    type: 'message',
    role: 'assistant',
    model: routing?.selected_model ?? res.model,
    content: res.blocks.map(anthropicBlock),
    stop_reason: ANTHROPIC_STOP_OUT[res.stop],
    stop_sequence: null,
    usage: anthropicUsageOut(res.usage),
  };
  if (routing) out.metadata = { service_routing: routing };
  return out;
}
