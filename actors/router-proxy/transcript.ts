import type { ContentBlock, MessageState, OutputPart } from '../../src/domain/ledger.js';
import type { Item, LlmResponse, Part } from '../../src/llm/types.js';

function userParts(parts: ContentBlock[]): Part[] {
  // Files and images are referenced by id; their bytes are not inlined in this build.
  return parts.map((p) => ({ type: 'text', text: p.type === 'text' ? p.text ?? '' : `[${p.type} ${p.file_id}]` }));
}

function outputItems(parts: OutputPart[]): Item[] {
  const items: Item[] = [];
  for (const p of parts) {
    if (p.type === 'text') items.push({ kind: 'message', role: 'assistant', content: [{ type: 'text', text: p.text }] });
    else if (p.type === 'tool_call') items.push({ kind: 'tool_call', id: p.id, name: p.name, arguments: JSON.stringify(p.arguments) });
    else items.push({ kind: 'tool_result', callId: p.tool_call_id, content: p.content, isError: p.is_error });
  }
  return items;
}

/**
 * The conversation as the model sees it: earlier completed turns, then the
 * current message with whatever tool calls and results it has so far.
 */
export function conversationItems(history: MessageState[], current: MessageState): Item[] {
  const items: Item[] = [];
  for (const m of history) {
    if (m.sequence_number >= current.sequence_number || m.status !== 'completed') continue;
    items.push({ kind: 'message', role: 'user', content: userParts(m.parts) }, ...outputItems(m.output.parts));
  }
  items.push({ kind: 'message', role: 'user', content: userParts(current.parts) }, ...outputItems(current.output.parts));
  return items;
}

const STOP: Record<LlmResponse['stop'], string> = { end: 'end_turn', max_tokens: 'max_tokens', tool_use: 'tool_use', stop_sequence: 'stop_sequence', refusal: 'refusal' };

/** A model response as output parts; tool-call arguments become objects. */
export function responseParts(res: LlmResponse): { parts: OutputPart[]; stop_reason: string } {
  const parts: OutputPart[] = res.blocks.map((b) => {
    if (b.type === 'text') return { type: 'text', text: b.text };
    let args: Record<string, unknown>;
    try {
      const parsed = JSON.parse(b.arguments || '{}') as unknown;
      args = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : { value: parsed };
    } catch {
      args = { _unparsed: b.arguments };
    }
    return { type: 'tool_call', id: b.id, name: b.name, arguments: args };
  });
  return { parts: parts.filter((p) => p.type !== 'text' || p.text.length > 0), stop_reason: STOP[res.stop] ?? res.stop };
}
