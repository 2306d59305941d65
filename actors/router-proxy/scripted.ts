import type { OutputPart } from '../../src/domain/ledger.js';
import type { Script } from '../../src/store/agents.js';
import type { ModelResult } from '../session/messages.js';

/**
 * The `scripted` provider: model call `callIndex` of a message gets turn
 * `callIndex` of the script; past the end it answers with the script's last
 * text turn. Deterministic, so demos and tests need no API key.
 */
export function scriptedResponse(script: Script | undefined, callIndex: number): ModelResult {
  if (!script || script.turns.length === 0) return { ok: false, error: 'The scripted model has no script turns.' };
  let turn = script.turns[callIndex];
  if (!turn) turn = [...script.turns].reverse().find((t) => 'text' in t) ?? script.turns[script.turns.length - 1];
  let parts: OutputPart[];
  if ('text' in turn) {
    parts = [{ type: 'text', text: turn.text }];
  } else {
    parts = turn.tool_calls.map((c, i) => ({ type: 'tool_call', id: c.id ?? `call_${callIndex}_${i}`, name: c.name, arguments: c.arguments }));
  }
  const text = parts.map((p) => (p.type === 'text' ? p.text : JSON.stringify(p))).join('');
  return {
    ok: true,
    parts,
    stop_reason: 'text' in turn ? 'end_turn' : 'tool_use',
    usage: { input_tokens: 0, output_tokens: Math.ceil(text.length / 4) },
  };
}
