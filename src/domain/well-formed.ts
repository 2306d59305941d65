/**
 * Lone UTF-16 surrogates ("\ud800" in JSON) are not Unicode text: strict JSON
 * parsers (jq, serde_json) refuse them, and BSON stores them as U+FFFD. Troupe
 * keeps every string well formed, each lone surrogate becoming U+FFFD, so what
 * a client is echoed, the ledger's JSON text and the BSON projections agree.
 */

import { JsonTooDeepError, nestsDeeperThan } from './json-depth.js';

type WellFormable = string & { toWellFormed(): string; isWellFormed(): boolean };

/** Fast pre-check on JSON text: a lone surrogate can only arrive as a `\uD800`-`\uDFFF` escape. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

export function mayHoldLoneSurrogate(jsonText: string): boolean {
  return SURROGATE_ESCAPE.test(jsonText);
}

/**
 * JSON text parsed with every string and key well formed: for JSON that reaches Troupe other than as a request
 * body (archive files) or was stored before its writer was guarded. Throws what JSON.parse throws, and
 * JsonTooDeepError past `maxDepth`: judged before the value is walked (here, by the repair of lone surrogates, and by
 * the caller's walks after), since JSON.parse takes any depth and the recursive walks overflow the stack.
 */
export function parseWellFormed(jsonText: string, maxDepth = Infinity): unknown {
  const parsed: unknown = JSON.parse(jsonText);
  if (maxDepth < Infinity && nestsDeeperThan(parsed, maxDepth)) throw new JsonTooDeepError(maxDepth);
  return mayHoldLoneSurrogate(jsonText) ? wellFormed(parsed) : parsed;
}

/** A copy of a JSON value with every string and key well formed; the value itself when nothing needed it. */
export function wellFormed<T>(value: T): T {
  return fix(value) as T;
}

function fix(v: unknown): unknown {
  if (typeof v === 'string') return (v as WellFormable).isWellFormed() ? v : (v as WellFormable).toWellFormed();
  if (Array.isArray(v)) return v.map(fix);
  if (v === null || typeof v !== 'object') return v;
  // A Date (or anything with toJSON) is written as what toJSON gives.
  if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return fix((v as { toJSON(): unknown }).toJSON());
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[fix(k) as string] = fix(x);
  return out;
}

/** JSON text with no lone surrogate whatever the value held; the scan runs only when the text has a surrogate escape. */
export function wellFormedJson(value: unknown): string {
  const text = JSON.stringify(value);
  // JSON.stringify writes a lone surrogate as a lowercase `\udXXX` escape (and a pair as the raw character).
  return text !== undefined && text.includes('\\ud') ? JSON.stringify(fix(value)) : text;
}
