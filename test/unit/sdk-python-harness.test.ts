import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

/** sdks/python's own tests (standard library unittest), run with the host's python3: the harness and the triage example. */
describe('sdks/python: the local harness', () => {
  it('passes its unittest suite', () => {
    const root = join(__dirname, '../../..');
    const r = spawnSync('python3', ['-B', '-m', 'unittest', 'discover', '-s', 'sdks/python/tests'], { cwd: root, encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.error, undefined, `python3 could not run: ${String(r.error)}`);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /Ran 3 tests/);
  });
});
