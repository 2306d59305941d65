import assert from 'node:assert/strict';
import { realpathSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { checkArguments } from '../../actors/tool-runner/input-check.js';
import type { HostSandbox } from '../../src/lib/sandbox/capabilities.js';
import { classifyExit, type ExitFacts } from '../../src/lib/sandbox/classify.js';
import { sandboxCommand } from '../../src/lib/sandbox/command.js';
import { SandboxUnavailableError } from '../../src/lib/sandbox/unavailable.js';
import { pythonInterpreter } from '../../src/lib/sandbox/python.js';
import { pythonRuntime } from '../../src/lib/sandbox/runtimes.js';
import { childEnv } from '../../src/lib/sandbox/env.js';
import { extractArchive, insideRoot } from '../../src/lib/sandbox/extract.js';
import type { SandboxRequest } from '../../src/lib/sandbox/types.js';
import { tarGz, type TarEntry } from '../support/archives.js';

const FILES = { node: '/usr/bin/node', runner: '/app/runner.js', guard: '/app/net-guard.js', pythonRunner: '/app/python/runner.py' };
const REQ: SandboxRequest = { rootDir: '/v/1', handlerPath: '/v/1/t.js', scratchDir: '/s/1', args: {}, env: {}, timeoutMs: 2500, memoryMb: 64, internetAccess: false };
const LEGACY = { level: 'namespace-net', seccomp: false, process_limit: 'none', scratch_quota_mb: null, bwrapError: 'none', mapRootUser: false } as const;
const STRONG: HostSandbox = { ...LEGACY, network_isolation: 'namespace', fs: 'node-permission-model', user: 'dropped', rlimits: 'prlimit' };
const WEAK: HostSandbox = { ...LEGACY, level: 'weak', network_isolation: 'runtime-guard', fs: 'node-permission-model', user: 'inherited', rlimits: 'heap-only' };

describe('legacy sandbox command', () => {
  it('wraps node in a namespace, a dropped user and rlimits on a capable host', () => {
    const c = sandboxCommand(REQ, STRONG, FILES);
    const argv = [c.file, ...c.args];
    assert.equal(c.network, 'namespace');
    assert.deepEqual(argv.slice(0, 3), ['/usr/bin/unshare', '--net', '--']);
    assert.ok(argv.includes('--reuid=65534'));
    assert.ok(argv.includes(`--data=${(64 + 128) * 1024 * 1024}`));
    assert.ok(argv.includes('--cpu=4'));
    assert.ok(argv.includes('--max-old-space-size=64'));
    assert.deepEqual(argv.filter((a) => a.startsWith('--allow-fs')), ['--allow-fs-read=/v/1', '--allow-fs-read=/s/1', '--allow-fs-read=/app/runner.js', '--allow-fs-write=/s/1']);
    assert.ok(!argv.includes('--require'), 'the namespace stands alone');
    assert.equal(argv.at(-1), '/app/runner.js');
  });

  it('falls back to the runtime guard, and never opens the host network, internet access or not', () => {
    const weak = sandboxCommand(REQ, WEAK, FILES);
    assert.equal(weak.file, '/usr/bin/node');
    assert.deepEqual(weak.args.slice(weak.args.indexOf('--require'), weak.args.indexOf('--require') + 2), ['--require', '/app/net-guard.js']);
    assert.ok(weak.args.includes('--allow-fs-read=/app/net-guard.js'));
    const open = sandboxCommand({ ...REQ, internetAccess: true }, STRONG, FILES);
    assert.equal(open.network, 'namespace');
    assert.deepEqual([open.file, ...open.args].slice(0, 2), ['/usr/bin/unshare', '--net']);
  });

  it('refuses a .py handler: Python has no permission model to stand in for a namespace sandbox', () => {
    for (const host of [STRONG, WEAK]) assert.throws(() => sandboxCommand({ ...REQ, handlerPath: '/v/1/t.py' }, host, FILES), SandboxUnavailableError);
  });

  it('gives bwrap a Python runtime of the interpreter, its standard library and their libraries, nothing else', function () {
    this.timeout(20_000); // the interpreter and ldd probes, once per process
    const python = pythonInterpreter()!;
    const rt = pythonRuntime(FILES, { memoryMb: 64 });
    assert.deepEqual(rt.argv, [realpathSync(python.executable), '-I', '-S', '-B', '/run/troupe/runner.py', '64']);
    assert.equal(rt.files['/run/troupe/runner.py'], '/app/python/runner.py');
    assert.ok(rt.readOnlyPaths.includes(python.stdlib) && rt.readOnlyPaths.includes(realpathSync(python.executable)));
    for (const p of rt.readOnlyPaths) assert.ok(p === python.stdlib || p === realpathSync(python.executable) || /\.so(\.|$)/.test(p), `only libraries besides: ${p}`);
    assert.ok(!rt.readOnlyPaths.some((p) => /site-packages|dist-packages/.test(p)));
  });

  it('keeps runtime-changing names out of the environment', () => {
    assert.deepEqual(childEnv({ API_KEY: 'a', NODE_OPTIONS: '--allow-fs-read=*', LD_PRELOAD: '/x.so', UV_THREADPOOL_SIZE: '1', TMPDIR: '/etc' }, '/s/1'), { API_KEY: 'a', TMPDIR: '/s/1' });
  });
});

describe('sandbox exit classification', () => {
  const base: ExitFacts = { code: 0, signal: null, timedOut: false, tooLarge: false, result: Buffer.alloc(0), stderr: '', limit: 100, timeoutMs: 1500, memoryMb: 64 };

  it('prefers our own kills, then the reported result, then how the process died', () => {
    assert.equal((classifyExit({ ...base, timedOut: true, signal: 'SIGKILL' }) as { kind: string }).kind, 'timeout');
    assert.equal((classifyExit({ ...base, tooLarge: true }) as { kind: string }).kind, 'output_too_large');
    assert.deepEqual(classifyExit({ ...base, result: Buffer.from('{"ok":true,"output":{"x":1}}') }), { ok: true, output: { x: 1 } });
    assert.deepEqual(classifyExit({ ...base, result: Buffer.from('{"ok":false,"error":"boom"}') }), { ok: false, kind: 'error', error: 'boom' });
    assert.equal((classifyExit({ ...base, result: Buffer.from('{"ok":false,"error":"RangeError: Array buffer allocation failed"}') }) as { kind: string }).kind, 'memory');
    assert.equal((classifyExit({ ...base, code: 134, stderr: 'FATAL ERROR: Reached heap limit Allocation failed' }) as { kind: string }).kind, 'memory');
    assert.equal((classifyExit({ ...base, result: Buffer.from('{"ok":false,"error":"MemoryError: "}') }) as { kind: string }).kind, 'memory');
    assert.equal((classifyExit({ ...base, result: Buffer.from('{"ok":false,"error":"ValueError: no MemoryError here"}') }) as { kind: string }).kind, 'error');
    assert.equal((classifyExit({ ...base, code: null, signal: 'SIGXCPU' }) as { kind: string }).kind, 'timeout');
    const crash = classifyExit({ ...base, code: 3, stderr: 'SECRET=hunter2' });
    assert.deepEqual(crash, { ok: false, kind: 'crash', error: 'The tool process exited with code 3 before returning a result.' });
  });
});

describe('tool arguments', () => {
  const schema = { type: 'object', required: ['city'], properties: { city: { type: 'string' } } };
  it('checks arguments against input_schema', () => {
    assert.equal(checkArguments(schema, { city: 'Oslo' }), null);
    assert.match(checkArguments(schema, {})!, /^arguments do not match input_schema: arguments must have required property 'city'/);
    assert.match(checkArguments(null, [])!, /must be an object/);
    assert.equal(checkArguments(null, { any: 1 }), null);
  });
});

describe('archive extraction', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'troupe-extract-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const extract = async (entries: TarEntry[]) => {
    const buf = await tarGz(entries);
    await extractArchive(() => Readable.from([buf]), dir);
  };

  it('writes files, directories, in-root symlinks and hardlinks as copies', async () => {
    await extract([
      { name: 'a/', type: 'directory' },
      { name: 'a/x.js', content: 'one' },
      { name: 'a/x.js', content: 'two' },
      { name: 'b/link.js', type: 'symlink', linkname: '../a/x.js' },
      { name: 'c.js', type: 'link', linkname: 'a/x.js' },
    ]);
    assert.equal(await readFile(join(dir, 'a/x.js'), 'utf8'), 'two');
    assert.equal(await readFile(join(dir, 'b/link.js'), 'utf8'), 'two');
    assert.equal(await readFile(join(dir, 'c.js'), 'utf8'), 'two');
  });

  it('refuses escaping entries before writing anything', async () => {
    for (const bad of [
      [{ name: 'ok.js', content: 'x' }, { name: '../escape.js', content: 'x' }],
      [{ name: 'ok.js', content: 'x' }, { name: 'l', type: 'symlink', linkname: '../../etc' }],
      [{ name: 'd', type: 'symlink', linkname: '.' }, { name: 'd/f.js', content: 'x' }],
    ] as TarEntry[][]) {
      await assert.rejects(extract(bad), /archive|leaves|symlink/i);
      assert.deepEqual(await readdir(dir), []);
    }
    assert.throws(() => insideRoot('/v/1', '../2/x'), /leaves/);
  });
});
