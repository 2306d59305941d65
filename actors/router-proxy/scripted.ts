import type { OutputPart } from '../../src/domain/ledger.js';
import type { ModelAnswer, ModelResult } from '../../src/domain/actors/session.js';
import type { Script } from '../../src/domain/agent.js';
import { fillPlaceholders as fill } from '../../src/domain/script-placeholders.js';

/** Whether any turn has a placeholder, i.e. whether the call needs the message's tool results. */
export function quotesToolResults(script: Script | undefined): boolean {
  return !!script && JSON.stringify(script.turns).includes('{{');
}

/** The latest result of each tool in the message so far, parsed from its JSON text where it is JSON. */
function toolResults(parts: readonly OutputPart[]): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const p of parts) {
    if (p.type !== 'tool_result') continue;
    const text = p.content.map((c) => c.text).join('');
    try {
      out.set(p.tool_name, JSON.parse(text));
    } catch {
      out.set(p.tool_name, text);
    }
  }
  return out;
}

/**
 * The `scripted` provider: model call `callIndex` of a message gets turn
 * `callIndex` of the script; past the end it answers with the script's last
 * text turn. Deterministic, so demos and tests need no API key.
 */
export function scriptedResponse(script: Script | undefined, callIndex: number, output: readonly OutputPart[] = []): ModelResult {
  if (!script || script.turns.length === 0) return { ok: false, error: 'The scripted model has no script turns.' };
  let turn = script.turns[callIndex];
  if (!turn) turn = [...script.turns].reverse().find((t) => 'text' in t) ?? script.turns[script.turns.length - 1];
  const results = toolResults(output);
  let parts: ModelAnswer['parts'];
  if ('text' in turn) {
    parts = [{ type: 'text', text: fill(turn.text, results) as string }];
  } else {
    parts = turn.tool_calls.map((c, i) => ({ type: 'tool_call', id: c.id ?? `call_${callIndex}_${i}`, name: c.name, arguments: fill(c.arguments, results) as Record<string, unknown> }));
  }
  const text = parts.map((p) => (p.type === 'text' ? p.text : JSON.stringify(p))).join('');
  return {
    ok: true,
    parts,
    stop_reason: 'text' in turn ? 'end_turn' : 'tool_use',
    usage: { input_tokens: 0, output_tokens: Math.ceil(text.length / 4) },
  };
}
