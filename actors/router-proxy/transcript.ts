import type { ModelAnswer } from '../../src/domain/actors/session.js';
import type { ContentBlock, MessageState, OutputPart } from '../../src/domain/ledger.js';
import { fileKey } from '../../src/lib/llm/file-parts.js';
import type { Item, LlmResponse, Part } from '../../src/lib/llm/types.js';

/** File and image blocks become the parts `resolveFileParts` loaded for them. */
function userParts(parts: ContentBlock[], files: Map<string, Part>): Part[] {
  return parts.map((p) => (p.type === 'text' ? { type: 'text', text: p.text ?? '' } : files.get(fileKey(p)) ?? { type: 'text', text: `[${p.type} ${p.file_id} unavailable]` }));
}

/**
 * Whether an earlier message's turn is in the model's history: a completed one, and one a later message
 * interrupted (`on_busy` `interrupt`: its content and output so far stay). A failed or cancelled turn is
 * left out, and so is one a later message rolled back (`on_busy` `rollback`), which the ledger still holds.
 */
export function inHistory(m: MessageState): boolean {
  return m.status === 'completed' || (m.status === 'cancelled' && m.interrupted === 'interrupt');
}

/** The messages whose user parts a call sends (the same selection as conversationItems). */
export function sentMessages(history: MessageState[], current: MessageState): MessageState[] {
  return [...history.filter((m) => m.sequence_number < current.sequence_number && inHistory(m)), current];
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
export function conversationItems(history: MessageState[], current: MessageState, files: Map<string, Part> = new Map()): Item[] {
  return sentMessages(history, current).flatMap((m) => [{ kind: 'message', role: 'user', content: userParts(m.parts, files) } as Item, ...outputItems(m.output.parts)]);
}

const STOP: Record<LlmResponse['stop'], ModelAnswer['stop_reason']> = { end: 'end_turn', max_tokens: 'max_tokens', tool_use: 'tool_use', stop_sequence: 'stop_sequence', refusal: 'refusal' };

/** A model response as output parts; tool-call arguments become objects. */
export function responseParts(res: LlmResponse): ModelAnswer {
  const parts: ModelAnswer['parts'] = res.blocks.map((b) => {
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
  return { parts: parts.filter((p) => p.type !== 'text' || p.text.length > 0), stop_reason: STOP[res.stop] };
}
