import assert from 'node:assert/strict';
import { bwrapCommand, sandboxHandlerPath } from '../../src/lib/sandbox/bwrap.js';
import { SANDBOX_PATHS } from '../../src/lib/sandbox/paths.js';
import type { Runtime } from '../../src/lib/sandbox/runtimes.js';
import type { SandboxRequest } from '../../src/lib/sandbox/types.js';

const REQ: SandboxRequest = { rootDir: '/v/1', handlerPath: '/v/1/lib/t.js', scratchDir: '/s/1', args: {}, env: { K: 'secret-value' }, timeoutMs: 2500, memoryMb: 64, internetAccess: false };
const RUNTIME: Runtime = { argv: ['/usr/bin/node', '/run/troupe/runner.js'], readOnlyPaths: ['/usr/bin/node', '/lib/libc.so.6'], files: { '/run/troupe/runner.js': '/app/runner.js' }, env: {} };

/** The argument following each occurrence of `flag`. */
function after(argv: string[], flag: string, n = 1): string[][] {
  return argv.flatMap((a, i) => (a === flag ? [argv.slice(i + 1, i + 1 + n)] : []));
}

describe('bwrap sandbox command', () => {
  const argv = bwrapCommand(REQ, { runtime: RUNTIME, hostUid: 200_123, scratchMb: 16 });
  const bw = argv.slice(argv.indexOf('/usr/bin/bwrap'));

  it('sets rlimits, then drops to the call uid, then enters every namespace', () => {
    assert.equal(argv[0], '/usr/bin/prlimit');
    for (const l of [`--data=${(64 + 128) * 1024 * 1024}`, '--cpu=4', `--fsize=${16 * 1024 * 1024}`, '--nofile=256', '--nproc=64']) assert.ok(argv.indexOf(l) < argv.indexOf('/usr/bin/setpriv'), l);
    assert.ok(argv.includes('--reuid=200123') && argv.indexOf('--reuid=200123') < argv.indexOf('/usr/bin/bwrap'));
    for (const ns of ['--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-net', '--unshare-cgroup-try', '--die-with-parent', '--new-session']) assert.ok(bw.includes(ns), ns);
    assert.deepEqual(after(bw, '--seccomp'), [['4']]);
  });

  it('binds only the runtime, the version read-only and a size-capped scratch tmpfs; / read-only', () => {
    assert.deepEqual(after(bw, '--ro-bind', 2), [['/usr/bin/node', '/usr/bin/node'], ['/lib/libc.so.6', '/lib/libc.so.6'], ['/app/runner.js', '/run/troupe/runner.js'], ['/v/1', '/agent']]);
    assert.deepEqual(after(bw, '--bind', 2), []);
    assert.deepEqual(after(bw, '--tmpfs'), [['/tmp']]);
    assert.deepEqual(after(bw, '--size'), [[String(16 * 1024 * 1024)]]);
    assert.deepEqual(after(bw, '--remount-ro'), [['/']]);
    assert.deepEqual(argv.slice(-2), RUNTIME.argv);
    assert.ok(!argv.some((a) => a.includes('secret-value')), 'secrets never reach a command line');
  });

  it('binds storage and the egress socket read-write when asked, and cuts the network either way', () => {
    const on = bwrapCommand({ ...REQ, internetAccess: true, storageDir: '/s/st', egressSocket: '/run/p/1.sock' }, { runtime: RUNTIME, hostUid: null, scratchMb: 64 });
    assert.deepEqual(after(on, '--bind', 2), [['/s/st', SANDBOX_PATHS.storage], ['/run/p/1.sock', SANDBOX_PATHS.egressSocket]]);
    assert.ok(on.includes('--unshare-net'));
    assert.ok(!on.includes('/usr/bin/setpriv'), 'no uid drop when Troupe is not root');
    assert.ok(!on.some((a) => a.startsWith('--nproc')), 'nor a process cap that would count Troupe\'s own uid');
  });

  it('names the handler by its path under /agent', () => {
    assert.equal(sandboxHandlerPath(REQ), '/agent/lib/t.js');
  });
});
