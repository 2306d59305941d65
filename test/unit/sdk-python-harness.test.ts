import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const root = join(__dirname, '../../..');

/** Standard library unittest, run with the host's python3 (which `npm test` installs for Python custom tools). */
function unittest(args: string[]): string {
  const r = spawnSync('python3', ['-B', ...args], { cwd: root, encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.error, undefined, `python3 could not run: ${String(r.error)}`);
  assert.equal(r.status, 0, r.stderr);
  return r.stderr;
}

describe('sdks/python: the local harness', () => {
  it("passes sdks/python's unittest suite", () => {
    assert.match(unittest(['-m', 'unittest', 'discover', '-s', 'sdks/python/tests']), /Ran 4 tests/);
  });

  it("runs examples/triage-agent-py's local test the way its README says", () => {
    assert.match(unittest(['examples/triage-agent-py/test_agent.py']), /Ran 3 tests/);
  });
});
