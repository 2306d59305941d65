import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

/** The benches' command lines, run as a user would run them (they parse their arguments before starting anything). */
const BENCHES = ['ledger', 'batch', 'router', 'scale', 'webhooks'].map((name) => ({ name, script: join(__dirname, `../../bench/${name}/run.js`) }));

function run(script: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [script, ...args], { encoding: 'utf8', timeout: 20_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('bench command lines', function () {
  // Each case starts a Node process: allow for a loaded CI host.
  this.timeout(30_000);
  for (const { name, script } of BENCHES) {
    it(`${name}: --help prints the usage and exits 0`, () => {
      const r = run(script, ['--help']);
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, new RegExp(`^Usage: node dist/bench/${name}/run\\.js `));
    });
    it(`${name}: an unknown option exits 2 with the usage, not a stack trace`, () => {
      const r = run(script, ['--no-such-option']);
      assert.equal(r.status, 2);
      assert.match(r.stderr, /no-such-option/);
      assert.match(r.stderr, /Usage: /);
      assert.doesNotMatch(r.stderr, /\n\s+at /);
    });
  }
  it('a numeric option that is not a number exits 2 naming it', () => {
    const r = run(BENCHES[0].script, ['--sessions', 'many']);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /--sessions must be a number, not "many"/);
  });
});
