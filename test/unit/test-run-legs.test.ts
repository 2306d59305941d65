import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { allLegs, FIRST_LEG_ONLY, firstLegOnly, ignoredOnLeg } from '../../infra/services/run-tests.js';
import { readFailures } from '../support/failures.js';
import { fileTimings, formatTimings } from '../support/timings.js';

const repo = resolve(__dirname, '../../..');

describe('npm test: which suites each leg runs, and their times', () => {
  it('every suite named first-leg-only is an integration test file that exists (mocha --ignore would pass over a wrong name silently)', () => {
    const names = [...new Set([...FIRST_LEG_ONLY, ...firstLegOnly({ TROUPE_FUZZ_SCALE: 'fast' })])];
    assert.ok(names.length > FIRST_LEG_ONLY.length, 'the fuzzers are added to the list');
    assert.equal(new Set(FIRST_LEG_ONLY).size, FIRST_LEG_ONLY.length, 'no suite is named twice');
    const missing = names.filter((f) => {
      const m = /^dist\/test\/integration\/([a-z0-9-]+)\.test\.js$/.exec(f);
      return !m || !existsSync(resolve(repo, `test/integration/${m[1]}.test.ts`));
    });
    assert.deepEqual(missing, []);
  });

  it('later MongoDB-wire legs leave the first-leg-only suites out; the Redis Cluster leg keeps every file its config names', () => {
    const legs = allLegs({});
    assert.deepEqual(legs.map((l) => Boolean(l.cluster)), [false, false, true]);
    assert.deepEqual(ignoredOnLeg(legs[0], 0, {}), []);
    assert.deepEqual(ignoredOnLeg(legs[1], 1, {}), firstLegOnly({}));
    const cluster = (JSON.parse(readFileSync(resolve(repo, '.mocharc.cluster.json'), 'utf8')) as { spec: string[] }).spec;
    assert.ok(cluster.some((f) => FIRST_LEG_ONLY.includes(f)), 'the cluster config names a first-leg-only suite (webhook fairness), so this is a real case');
    assert.deepEqual(ignoredOnLeg(legs[2], 2, {}).filter((f) => cluster.includes(f)), []);
  });

  it('sums each file over its top-level suites and lists the slowest first', () => {
    const rows = fileTimings([
      { file: '/r/a.test.js', start: 0, end: 1000 },
      { file: '/r/b.test.js', start: 1000, end: 4000 },
      { file: '/r/a.test.js', start: 4000, end: 6500 },
      { file: '/r/c.test.js', start: 6500, end: 7000 },
      { file: '/r/d.test.js', start: 7000, end: 7040 },
    ]);
    assert.deepEqual(rows, [
      { file: '/r/a.test.js', ms: 3500 },
      { file: '/r/b.test.js', ms: 3000 },
      { file: '/r/c.test.js', ms: 500 },
      { file: '/r/d.test.js', ms: 40 },
    ]);
    const text = formatTimings(rows, '/r');
    assert.match(text, /7 s in all/);
    assert.ok(text.indexOf('a.test.js') < text.indexOf('b.test.js') && !text.includes('/r/'), text);
    assert.ok(!text.includes('d.test.js') && text.includes('and 1 file(s) under 0.1 s each'), text);
  });

  it("records each failed test by full title with its error's first line, so the matrix summary can name it", () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-failures-test-'));
    try {
      const spec = join(dir, 'sample.test.js');
      writeFileSync(spec, `describe('outer', () => {
  it('passes', () => {});
  it('fails here', () => { throw new Error('first line\\nsecond line'); });
  describe('inner', () => { it('fails too', () => { require('node:assert').equal(1, 2); }); });
});\n`);
      const file = join(dir, 'failures.jsonl');
      const run = spawnSync(process.execPath, [resolve(repo, 'node_modules/mocha/bin/mocha.js'), '--require', resolve(repo, 'dist/test/support/failures.js'), '--reporter', 'dot', spec], { env: { ...process.env, TROUPE_TEST_FAILURES_FILE: file }, encoding: 'utf8' });
      assert.equal(run.status, 2, run.stdout + run.stderr);
      const failed = readFailures(file);
      assert.deepEqual(failed.map((f) => f.title), ['outer fails here', 'outer inner fails too']);
      assert.equal(failed[0].error, 'first line');
      assert.equal(failed[1].error, '1 == 2');
      assert.deepEqual(readFailures(join(dir, 'absent.jsonl')), [], 'no file reads as no failure');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
