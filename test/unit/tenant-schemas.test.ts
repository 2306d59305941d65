import assert from 'node:assert/strict';
import { checkArguments } from '../../actors/tool-runner/input-check.js';
import { TenantPatternError, tenantRegExp } from '../../src/lib/schemas/tenant-regexp.js';
import { userSchemaProblem } from '../../src/lib/schemas/validator.js';

describe('tenant schemas: linear-time judging', () => {
  it('matches ECMA-262 patterns RE2 runs the way RegExp would', () => {
    const cases: [string, string, boolean][] = [
      ['^\\d{3}-\\w+$', '123-ab_c', true],
      ['^\\d{3}-\\w+$', '12-abc', false],
      ['^(?<year>\\d{4})-\\d{2}$', '2026-11', true],
      ['^caf\\u00e9$', 'café', true],
      ['^[^/]+/[a-z]+$', 'a b/c', true],
      ['^\\p{Lu}', 'Émile', true],
      ['ab', 'xxabxx', true],
      ['^$', '', true],
      // Where RE2's own reading differs, the JavaScript one is spelled out: \s and \S with Unicode spaces, `.`
      // without any line terminator, [\b] a backspace.
      ['^a\\sb$', 'a\u00a0b', true],
      ['^\\S+$', 'a\u2028b', false],
      ['^[^\\s]+$', 'a\ufeffb', false],
      ['^a.b$', 'a\rb', false],
      ['^a.b$', 'a\u2029b', false],
      ['^.$', '😀', true],
      ['^[.]$', '.', true],
      ['^[\\b]$', '\b', true],
    ];
    for (const [pattern, value, expected] of cases) {
      assert.equal(tenantRegExp(pattern, 'u').test(value), expected, `${pattern} on ${value}`);
      assert.equal(new RegExp(pattern, 'u').test(value), expected, `RegExp agrees on ${pattern}`);
    }
  });

  it('refuses backreferences (numbered and named), lookaround, and what is not a regular expression', () => {
    for (const [pattern, why] of [
      ['(a)\\1', /backreference/],
      ['(?<n>a)\\k<n>', /backreference/],
      ['(?=a)a', /lookaround/],
      ['(?<!a)b', /lookaround/],
      ['a(', /not a valid regular expression/],
      ['a{1001}', /RE2/],
    ] as const) {
      assert.throws(() => tenantRegExp(pattern, 'u'), (e: unknown) => e instanceof TenantPatternError && e.pattern === pattern && why.test(e.message));
    }
    // Inside a class, or escaped, the same characters are plain.
    assert.equal(tenantRegExp('^[(?=]+\\(\\?=$', 'u').test('(?=(?='), true);
  });

  it('judges a catastrophic pattern and a large uniqueItems array in bounded time', function () {
    // Pair by pair, 100,000 items are 5e9 comparisons: minutes. Linear, well under a second.
    this.timeout(10_000);
    const started = Date.now();
    assert.match(userSchemaProblem({ type: 'string', pattern: '^(a|a)*$' }, `${'a'.repeat(5000)}!`) ?? '', /must match pattern/);
    assert.match(userSchemaProblem({ type: 'array', uniqueItems: true }, [...Array.from({ length: 100_000 }, (_, i) => ({ i })), { i: 7 }]) ?? '', /items ## 7 and 100000 are identical/);
    assert.equal(userSchemaProblem({ type: 'array', uniqueItems: true }, [{ a: 1, b: [1, 2] }, { b: [1, 2], a: 2 }, { b: [2, 1], a: 1 }]), null);
    assert.match(userSchemaProblem({ type: 'array', uniqueItems: true }, [{ a: 1, b: [1, 2] }, { b: [1, 2], a: 1 }]) ?? '', /duplicate/, 'key order does not make items differ');
    assert.ok(Date.now() - started < 5_000, `took ${Date.now() - started} ms`);
  });

  it('refuses, rather than runs, a stored schema whose pattern RE2 cannot run (published before RE2)', () => {
    const legacy = { type: 'object', properties: { q: { type: 'string', pattern: '(a+)\\1' } } };
    assert.match(userSchemaProblem(legacy, { q: 'aa' }) ?? '', /cannot be used: pattern "\(a\+\)\\\\1" uses a backreference/);
    assert.match(checkArguments(legacy, { q: 'aa' }) ?? '', /cannot be checked against input_schema/);
  });
});
