import type { OutputPart } from '../../src/domain/ledger.js';
import type { ModelAnswer, ModelResult } from '../../src/domain/actors/session.js';
import type { Script } from '../../src/domain/agent.js';

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_-]+)((?:\.[A-Za-z0-9_-]+)*)\s*\}\}/g;

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

function lookup(results: Map<string, unknown>, tool: string, path: string): unknown {
  let v: unknown = results.get(tool);
  for (const key of path.split('.').filter(Boolean)) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[key] : undefined;
  return v;
}

/**
 * `{{tool_name.field}}` in a script's text or string arguments becomes that
 * field of the tool's latest result in this message, so a scripted answer
 * uses what the tools returned. A string that is one placeholder keeps the
 * value's JSON type (a number stays a number); a missing value stays as written.
 */
function fill(value: unknown, results: Map<string, unknown>): unknown {
  if (typeof value === 'string') {
    const whole = /^\{\{\s*([A-Za-z0-9_-]+)((?:\.[A-Za-z0-9_-]+)*)\s*\}\}$/.exec(value);
    if (whole) return lookup(results, whole[1], whole[2]) ?? value;
    return value.replace(PLACEHOLDER, (m, tool: string, path: string) => {
      const v = lookup(results, tool, path);
      return v === undefined ? m : typeof v === 'string' ? v : JSON.stringify(v);
    });
  }
  if (Array.isArray(value)) return value.map((v) => fill(v, results));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v, results)]));
  return value;
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
