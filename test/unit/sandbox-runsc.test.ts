import assert from 'node:assert/strict';
import { RESULT_DIR, runscCommand, runscSpec } from '../../src/lib/sandbox/runsc.js';
import type { Runtime } from '../../src/lib/sandbox/runtimes.js';
import type { SandboxRequest } from '../../src/lib/sandbox/types.js';

const REQ: SandboxRequest = { rootDir: '/v/1', handlerPath: '/v/1/lib/t.js', scratchDir: '/s/1', args: {}, env: { K: 'secret-value' }, timeoutMs: 2500, memoryMb: 64, internetAccess: false };
const RUNTIME: Runtime = { argv: ['/usr/bin/node', '/run/troupe/runner.js'], readOnlyPaths: ['/usr/bin/node', '/lib/libc.so.6'], files: { '/run/troupe/runner.js': '/app/runner.js' }, env: {} };
const MIB = 1024 * 1024;

interface Spec {
  root: { path: string; readonly: boolean };
  mounts: { destination: string; type: string; source: string; options: string[] }[];
  process: { user: { uid: number }; args: string[]; env: string[]; cwd: string; rlimits: { type: string; hard: number; soft: number }[]; noNewPrivileges: boolean };
  linux: { namespaces: { type: string; path?: string }[] };
}

describe('runsc OCI spec', () => {
  const spec = runscSpec(REQ, { runtime: RUNTIME, scratchMb: 16, resultDir: '/b/out', env: { K: 'secret-value', TMPDIR: '/tmp' } }) as Spec;

  it('has an empty read-only root and binds only the runtime, the version and the result dir; scratch is a sized tmpfs', () => {
    assert.deepEqual(spec.root, { path: 'root', readonly: true });
    const binds = spec.mounts.filter((m) => m.type === 'bind').map((m) => [m.source, m.destination, m.options.includes('ro') ? 'ro' : 'rw']);
    assert.deepEqual(binds, [['/usr/bin/node', '/usr/bin/node', 'ro'], ['/lib/libc.so.6', '/lib/libc.so.6', 'ro'], ['/app/runner.js', '/run/troupe/runner.js', 'ro'], ['/v/1', '/agent', 'ro'], ['/b/out', RESULT_DIR, 'rw']]);
    const tmp = spec.mounts.find((m) => m.destination === '/tmp')!;
    assert.equal(tmp.type, 'tmpfs');
    assert.ok(tmp.options.includes(`size=${16 * MIB}`));
    assert.ok(spec.mounts.some((m) => m.destination === '/proc' && m.type === 'proc'));
  });

  it('binds storage read-write when asked', () => {
    const s = runscSpec({ ...REQ, storageDir: '/st' }, { runtime: RUNTIME, scratchMb: 16, resultDir: '/b/out', env: {} }) as Spec;
    const st = s.mounts.find((m) => m.destination === '/storage')!;
    assert.equal(st.source, '/st');
    assert.ok(st.options.includes('rw'));
  });

  it('binds the egress socket and opens host Unix sockets only for a call with internet access', () => {
    const s = runscSpec({ ...REQ, internetAccess: true, egressSocket: '/run/p/1.sock' }, { runtime: RUNTIME, scratchMb: 16, resultDir: '/b/out', env: {} }) as Spec;
    assert.equal(s.mounts.find((m) => m.destination === '/run/troupe/egress.sock')?.source, '/run/p/1.sock');
    assert.ok(!spec.mounts.some((m) => m.destination === '/run/troupe/egress.sock'));
    assert.ok(runscCommand('/b/state', '/b', 'x', true).includes('--host-uds=open'));
    assert.ok(!runscCommand('/b/state', '/b', 'x').includes('--host-uds=open'));
  });

  it('runs as uid 1000 without privileges, under the limits', () => {
    assert.equal(spec.process.user.uid, 1000);
    assert.equal(spec.process.noNewPrivileges, true);
    assert.deepEqual(Object.fromEntries(spec.process.rlimits.map((r) => [r.type, r.hard])), {
      RLIMIT_NOFILE: 256,
      RLIMIT_FSIZE: 16 * MIB,
      RLIMIT_CPU: 4,
      RLIMIT_DATA: (64 + 128) * MIB,
    });
    for (const r of spec.process.rlimits) assert.equal(r.soft, r.hard);
    assert.deepEqual(spec.process.args, RUNTIME.argv);
    assert.equal(spec.process.cwd, '/agent');
  });

  it('has fresh namespaces only (none joins the host by path) and runs with no network', () => {
    assert.deepEqual(spec.linux.namespaces.map((n) => n.type).sort(), ['ipc', 'mount', 'network', 'pid', 'uts']);
    assert.ok(spec.linux.namespaces.every((n) => n.path === undefined));
    const argv = runscCommand('/b/state', '/b', 'troupe-x');
    assert.ok(argv.includes('--network=none') && argv.includes('--rootless'));
    assert.ok(!argv.some((a) => a.includes('host-uds') || a === '--network=host'));
  });

  it('puts secrets in the bundle environment, never on the command line', () => {
    assert.ok(spec.process.env.includes('K=secret-value'));
    assert.ok(!runscCommand('/b/state', '/b', 'troupe-x').some((a) => a.includes('secret-value')));
  });
});
