import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../../..');
const MOCHA = join(ROOT, 'node_modules', 'mocha', 'bin', 'mocha.js');
const GUARD = join(ROOT, 'dist', 'test', 'support', 'skips.js');

/** Runs mocha with the guard `npm test` passes over one made-up spec file. */
function run(dir: string, spec: string): { status: number | null; out: string } {
  const file = join(dir, `spec-${Math.random().toString(36).slice(2)}.js`);
  writeFileSync(file, spec);
  const r = spawnSync(process.execPath, [MOCHA, '--require', GUARD, file], { cwd: ROOT, encoding: 'utf8', timeout: 20_000 });
  return { status: r.status, out: r.stdout + r.stderr };
}

describe('the skip guard npm test runs every suite with (test/support/skips.ts)', function () {
  this.timeout(30_000);
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'troupe-skips-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('fails a run in which a test skipped itself, naming it', () => {
    const r = run(dir, `describe('a checker', () => { it('needs a tool', function () { this.skip(); }); it('runs', () => {}); });`);
    assert.notEqual(r.status, 0, r.out);
    assert.match(r.out, /1 test\(s\) skipped themselves; a required check must fail instead of skipping/);
    assert.match(r.out, /a checker needs a tool/);
  });

  it('fails a suite skipped from its before hook, and an it.skip', () => {
    const r = run(dir, `describe('a suite', () => { before(function () { this.skip(); }); it('one', () => {}); }); it.skip('two', () => {});`);
    assert.notEqual(r.status, 0, r.out);
    assert.match(r.out, /2 test\(s\) skipped themselves/);
  });

  it('passes a listed per-leg skip, and says it was skipped and why', () => {
    const r = run(dir, `describe('PubSubHub on a Redis Cluster: a silent shard subscriber', () => { before(function () { this.skip(); }); it('x', () => {}); });`);
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, /skipped on this leg: PubSubHub on a Redis Cluster: a silent shard subscriber x \(needs a Redis Cluster; runs on the redis-cluster leg\)/);
  });
});
