import { RE2JS } from 're2js';

/**
 * A pattern of a tenant's JSON Schema that Troupe will not run: RE2 matches in linear time and so has no
 * backreferences or lookaround, which are what make a backtracking engine take exponential time.
 */
export class TenantPatternError extends Error {
  override name = 'TenantPatternError';
  constructor(
    readonly pattern: string,
    readonly reason: string,
  ) {
    super(`pattern ${JSON.stringify(pattern)} ${reason}`);
  }
}

const UNSUPPORTED = "which Troupe's linear-time pattern engine (RE2) cannot run";

/** ECMA-262's WhiteSpace and LineTerminator, which its `\s` matches; RE2's `\s` is ASCII only. */
const JS_SPACE = '\\t\\n\\v\\f\\r \\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}\\x{feff}';
/** What ECMA-262's `.` matches without the s flag: all but line terminators (RE2's `.` leaves out only `\n`). */
const JS_DOT = '[^\\n\\r\\x{2028}\\x{2029}]';

/**
 * The pattern as RE2 must read it to match what ECMA-262 (whose u-mode syntax it has already passed) matches, or
 * a TenantPatternError. Backreferences and lookaround are refused by name: RE2JS.translateRegExp would turn `\k`
 * and `\8` into literal letters, so a backreference would silently match something else. `\s`, `\S` and `.` are
 * spelled out with JavaScript's sets, and `[\b]` (a backspace) as `\x08`. A scan that steps over escapes and
 * knows character classes (where `(?=` and `.` are plain) does it, in one pass.
 */
function toRe2Source(pattern: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === '\\') {
      const next = pattern[i + 1] ?? '';
      if (!inClass && (next === 'k' || (next >= '1' && next <= '9'))) throw new TenantPatternError(pattern, `uses a backreference, ${UNSUPPORTED}`);
      if (next === 's') out += inClass ? JS_SPACE : `[${JS_SPACE}]`;
      // Within a class RE2 has no way to add a negated set to others: there `\S` keeps RE2's (ASCII) reading.
      else if (next === 'S' && !inClass) out += `[^${JS_SPACE}]`;
      else if (next === 'b' && inClass) out += '\\x08';
      else out += ch + next;
      i++;
    } else if (inClass) {
      if (ch === ']') inClass = false;
      out += ch;
    } else if (ch === '(' && pattern[i + 1] === '?' && (pattern[i + 2] === '=' || pattern[i + 2] === '!' || (pattern[i + 2] === '<' && (pattern[i + 3] === '=' || pattern[i + 3] === '!')))) {
      throw new TenantPatternError(pattern, `uses lookaround, ${UNSUPPORTED}`);
    } else {
      if (ch === '[') inClass = true;
      out += ch === '.' ? JS_DOT : ch;
    }
  }
  return out;
}

/** The compiled matcher Ajv calls `test` on. */
interface Matcher {
  test(s: string): boolean;
}

/**
 * Ajv's `code.regExp` engine for tenant schemas (`pattern`, `patternProperties`, `propertyNames`): RE2, so a
 * value is matched in time linear in its length whatever the pattern. A pattern RE2 cannot run throws
 * TenantPatternError, which fails the schema's compile: publish turns it into a 400. The pattern must first
 * be valid ECMA-262 in u-mode (what Ajv itself requires of it); JavaScript only parses it here, never runs it.
 */
export function tenantRegExp(pattern: string, flags: string): Matcher {
  try {
    new RegExp(pattern, flags);
  } catch (e) {
    throw new TenantPatternError(pattern, `is not a valid regular expression: ${(e as Error).message}`);
  }
  const source = toRe2Source(pattern);
  let re: RE2JS;
  try {
    re = RE2JS.compile(RE2JS.translateRegExp(source));
  } catch (e) {
    throw new TenantPatternError(pattern, `cannot be run by Troupe's linear-time pattern engine (RE2): ${(e as Error).message}`);
  }
  return { test: (s: string) => re.test(s) };
}
// Ajv names the engine in standalone code by this expression; Troupe compiles tenant schemas in process only.
tenantRegExp.code = 'require("troupe/dist/src/lib/schemas/tenant-regexp.js").tenantRegExp';
