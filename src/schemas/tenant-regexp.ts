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

/**
 * Why RE2 would read the pattern differently from ECMA-262 (whose u-mode syntax it has already passed), or null.
 * RE2JS.translateRegExp turns escapes it does not know (`\k`, `\8`) into literal letters, so a named or
 * high-numbered backreference would silently match something else: those are refused here, by a scan that
 * steps over escapes and character classes (where `(?=` and `\k` mean nothing special).
 */
function unsupported(pattern: string): string | null {
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === '\\') {
      const next = pattern[i + 1] ?? '';
      if (!inClass && (next === 'k' || (next >= '1' && next <= '9'))) return 'uses a backreference';
      i++;
    } else if (inClass) {
      if (ch === ']') inClass = false;
    } else if (ch === '[') inClass = true;
    else if (ch === '(' && pattern[i + 1] === '?' && (pattern[i + 2] === '=' || pattern[i + 2] === '!' || (pattern[i + 2] === '<' && (pattern[i + 3] === '=' || pattern[i + 3] === '!')))) {
      return 'uses lookaround';
    }
  }
  return null;
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
  const why = unsupported(pattern);
  if (why) throw new TenantPatternError(pattern, `${why}, which Troupe's linear-time pattern engine (RE2) cannot run`);
  let re: RE2JS;
  try {
    re = RE2JS.compile(RE2JS.translateRegExp(pattern));
  } catch (e) {
    throw new TenantPatternError(pattern, `cannot be run by Troupe's linear-time pattern engine (RE2): ${(e as Error).message}`);
  }
  return { test: (s: string) => re.test(s) };
}
// Ajv names the engine in standalone code by this expression; Troupe compiles tenant schemas in process only.
tenantRegExp.code = 'require("troupe/dist/src/schemas/tenant-regexp.js").tenantRegExp';
