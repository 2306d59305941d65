/** `{{tool_name.field.field}}`: a tool's name, then a path into its result. */
const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_-]+)((?:\.[A-Za-z0-9_-]+)*)\s*\}\}/g;
const WHOLE = /^\{\{\s*([A-Za-z0-9_-]+)((?:\.[A-Za-z0-9_-]+)*)\s*\}\}$/;

function lookup(results: ReadonlyMap<string, unknown>, tool: string, path: string): unknown {
  let v: unknown = results.get(tool);
  for (const key of path.split('.').filter(Boolean)) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[key] : undefined;
  return v;
}

/**
 * `{{tool_name.field}}` in a script's text or string arguments becomes that field of the tool's latest result, so a
 * scripted answer uses what the tools returned. A string that is one placeholder keeps the value's JSON type (a
 * number stays a number); a missing value stays as written. One implementation for Troupe's `scripted` provider and
 * the JS SDK's local harness; the Python harness runs the same cases (sdks/fixtures/placeholders.json).
 */
export function fillPlaceholders(value: unknown, results: ReadonlyMap<string, unknown>): unknown {
  if (typeof value === 'string') {
    const whole = WHOLE.exec(value);
    if (whole) return lookup(results, whole[1], whole[2]) ?? value;
    return value.replace(PLACEHOLDER, (m, tool: string, path: string) => {
      const v = lookup(results, tool, path);
      return v === undefined ? m : typeof v === 'string' ? v : JSON.stringify(v);
    });
  }
  if (Array.isArray(value)) return value.map((v) => fillPlaceholders(v, results));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fillPlaceholders(v, results)]));
  return value;
}
