import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHarness, type Harness } from '../support/harness.js';
import { outcomes, outputOf, publishPythonAgent, startCase } from '../support/python-agent.js';
import { FILL_BOUND_FILES, FORK_BOUND, HOSTILE } from '../support/python-hostile-tools.js';

/**
 * A hostile tenant's Python tools against the sandbox's limits (issue #29
 * item 7): a fork bomb, filling scratch, writing outside it, and Troupe's
 * Redis with internet access off and on; each refused while the service keeps
 * serving. Every loop is bounded, so a weaker sandbox fails these tests
 * instead of the machine.
 */
describe('hostile Python tools against the limits', function () {
  this.timeout(60_000);
  let h: Harness;
  let sandboxDir: string;
  let hostileId: string;
  const nonce = randomBytes(6).toString('hex');
  const outside = [join(tmpdir(), `troupe-py-escape-${nonce}`), `/var/tmp/troupe-py-escape-${nonce}`, `/dev/shm/troupe-py-escape-${nonce}`];

  before(async () => {
    sandboxDir = await mkdtemp(join(tmpdir(), 'troupe-py-limits-'));
    h = await startHarness({ roles: ['web', 'worker'], env: { TROUPE_SANDBOX_DIR: sandboxDir } });
    const { fork_bomb, fill_scratch, write_outside, redis } = HOSTILE;
    hostileId = await publishPythonAgent(h, { fork_bomb, fill_scratch, write_outside, redis }, {
      fork: { fork_bomb: { bound: FORK_BOUND } },
      disk: { fill_scratch: { bound: FILL_BOUND_FILES } },
      escape: { write_outside: { paths: [...outside, join(sandboxDir, `escaped-${nonce}`), join(sandboxDir, 'scratch', `escaped-${nonce}`)] } },
      redis: { redis: { port: Number(new URL(h.env.REDIS_URL).port) } },
    });
  });
  after(async () => {
    await h?.close();
    await rm(sandboxDir, { recursive: true, force: true });
    for (const p of outside) await rm(p, { force: true });
  });

  async function stillServing(): Promise<void> {
    const health = await h.api('/healthz');
    assert.equal(health.status, 200, await health.text());
  }

  it('a fork bomb hits the process limit', async () => {
    const all = await outcomes(h, await startCase(h, hostileId, 'fork'), 40_000);
    const r = all.fork_bomb;
    assert.ok(r, JSON.stringify(all));
    if (r.ok) {
      const out = r.output as { forks: number; error: string | null };
      assert.ok(out.error !== null && out.forks < FORK_BOUND, `forked ${out.forks} times unrefused`);
    } else {
      assert.match(r.error, /process|killed|exited/, 'stopped by the sandbox, not by a bug');
    }
    await stillServing();
  });

  it('filling the scratch folder stops at its quota', async () => {
    const all = await outcomes(h, await startCase(h, hostileId, 'disk'), 45_000);
    const r = all.fill_scratch;
    assert.ok(r, JSON.stringify(all));
    if (r.ok) {
      const out = r.output as { written_mib: number; error: string | null };
      assert.ok(out.error !== null && out.written_mib < FILL_BOUND_FILES * 8, `wrote ${out.written_mib} MiB unrefused`);
    }
    assert.deepEqual(await readdir(join(sandboxDir, 'scratch')).catch(() => []), [], 'the scratch folder is gone after the call');
    await stillServing();
  });

  it('writes nothing outside its scratch folder', async () => {
    const all = await outcomes(h, await startCase(h, hostileId, 'escape'));
    const tried = outputOf<Record<string, string>>(all, 'write_outside');
    assert.equal(Object.keys(tried).length, outside.length + 3);
    for (const p of [...outside, join(sandboxDir, `escaped-${nonce}`), join(sandboxDir, 'scratch', `escaped-${nonce}`)]) assert.equal(existsSync(p), false, `${p} was written on the host`);
    const versions = await readdir(join(sandboxDir, 'versions'));
    for (const v of versions) assert.equal(existsSync(join(sandboxDir, 'versions', v, 'tools', 'escaped.txt')), false, 'the version folder stays read-only');
    await stillServing();
  });

  it("cannot reach Troupe's Redis with internet access off or on", async () => {
    for (const internet_access of [false, true]) {
      const all = await outcomes(h, await startCase(h, hostileId, 'redis', { internet_access }));
      const tried = outputOf<Record<string, string>>(all, 'redis');
      assert.deepEqual(Object.keys(tried).sort(), ['127.0.0.1', 'http', 'localhost']);
      for (const host of ['127.0.0.1', 'localhost']) assert.doesNotMatch(tried[host], /^connected/, `${host} (internet ${internet_access}): ${tried[host]}`);
      // Refused by the egress proxy (403), or no way out at all.
      assert.match(tried.http, /^(HTTPError 403|URLError|ConnectionRefusedError)$/, `internet ${internet_access}: ${tried.http}`);
    }
    await stillServing();
  });
});
