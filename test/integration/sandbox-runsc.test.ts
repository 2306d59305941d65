import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configureSandbox, hostSandbox, sandboxPolicy, type SandboxPolicy } from '../../src/lib/sandbox/capabilities.js';
import { enforceSandboxPolicy } from '../../src/lib/sandbox/policy.js';
import { runInSandbox } from '../../src/lib/sandbox/run.js';
import type { SandboxRequest, SandboxResult } from '../../src/lib/sandbox/types.js';

/**
 * TROUPE_SANDBOX=runsc end to end: real gVisor, a bundle per call. npm test
 * installs runsc (infra/services/runsc.ts), so a host without it fails here.
 */
type Tool = Pick<SandboxRequest, 'rootDir' | 'handlerPath' | 'scratchDir'>;

function output<T>(r: SandboxResult): T {
  assert.equal(r.ok, true, JSON.stringify(r));
  return (r as { output: T }).output;
}

/** The runsc processes of one bundle (its path is on their command lines). */
function runscProcesses(): string[] {
  return execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' }).split('\n').filter((l) => l.includes('troupe-runsc-') && !l.includes('ps -eo'));
}

describe('sandbox: runsc (gVisor)', function () {
  this.timeout(20_000);
  let base: string;
  let saved: SandboxPolicy;

  async function tool(source: string, file = 'tool.js'): Promise<Tool> {
    const rootDir = await mkdtemp(join(base, 'version-'));
    await chmod(rootDir, 0o755);
    await writeFile(join(rootDir, file), source);
    return { rootDir, handlerPath: join(rootDir, file), scratchDir: rootDir };
  }
  function run(t: Tool, over: Partial<SandboxRequest> = {}): Promise<SandboxResult> {
    return runInSandbox({ ...t, args: {}, env: {}, timeoutMs: 10_000, memoryMb: 128, internetAccess: false, ...over });
  }

  before(async () => {
    saved = sandboxPolicy();
    configureSandbox({ mode: 'runsc', scratchMb: 2 });
    base = await mkdtemp(join(tmpdir(), 'troupe-runsc-test-'));
    await chmod(base, 0o755);
  });
  after(async () => {
    configureSandbox(saved);
    await rm(base, { recursive: true, force: true });
  });

  it('is in force on this host (npm test installs runsc)', () => {
    const host = hostSandbox();
    assert.equal(host.level, 'runsc', String(host.bwrapError));
    assert.equal(host.fs, 'gvisor-oci-bundle');
  });

  it('lets a production web or worker start on it, logging the level in force', () => {
    const said: string[] = [];
    const log = { info: (_o: object, m: string) => said.push(m), warn: (_o: object, m: string) => said.push(`warn: ${m}`) };
    const caps = enforceSandboxPolicy({ mode: 'runsc', scratchMb: 2, production: true, allowWeak: false }, log);
    assert.equal(caps.level, 'runsc');
    assert.deepEqual(said, ['sandbox in force']);
  });

  it('runs a JS tool and a Python tool to their results', async () => {
    const [js, py] = await Promise.all([
      run(await tool('exports.handler = async ({ a, b }) => { console.log("noise"); return { sum: a + b }; };'), { args: { a: 2, b: 3 } }),
      run(await tool('def handler(args, context):\n    print("noise")\n    return {"product": args["a"] * args["b"]}\n', 'tool.py'), { args: { a: 4, b: 5 } }),
    ]);
    assert.deepEqual(output(js), { sum: 5 });
    assert.deepEqual(output(py), { product: 20 });
  });

  it('cannot read host files, see host processes, write outside scratch, or fill scratch past its quota', async () => {
    // Python: no permission model of its own, so this asks gVisor alone.
    const t = await tool(`import os
def attempt(f):
    try:
        return f()
    except OSError as e:
        import errno
        return errno.errorcode[e.errno]
def write(path, data=b"x"):
    with open(path, "wb") as f:
        f.write(data)
    return "wrote"
def quota():
    for i in range(8):
        write("/tmp/big%d" % i, bytes(1024 * 1024))
    return "wrote 8 MiB"
def handler(args, context):
    return {
        "shadow": attempt(lambda: open("/etc/shadow").read()),
        "root": sorted(os.listdir("/")),
        "pids": len([n for n in os.listdir("/proc") if n.isdigit()]),
        "writeAgent": attempt(lambda: write("/agent/x")),
        "writeLib": attempt(lambda: write("/lib/x86_64-linux-gnu/x")),
        "writeRoot": attempt(lambda: write("/x")),
        "scratch": attempt(lambda: write("/tmp/s") and open("/tmp/s").read() and "ok"),
        "quota": attempt(quota),
        "uid": os.getuid(),
    }
`, 'tool.py');
    const r = output<Record<string, unknown>>(await run(t));
    assert.equal(r.shadow, 'ENOENT');
    assert.ok(!(r.root as string[]).includes('etc') && !(r.root as string[]).includes('home'), JSON.stringify(r.root));
    assert.ok((r.pids as number) <= 3, `sees ${r.pids} processes`);
    for (const k of ['writeAgent', 'writeLib', 'writeRoot']) assert.ok(['EROFS', 'EACCES', 'EPERM'].includes(r[k] as string), `${k}: ${r[k]}`);
    assert.equal(r.scratch, 'ok');
    assert.ok(['ENOSPC', 'EFBIG'].includes(r.quota as string), `quota: ${r.quota}`);
    assert.equal(r.uid, 1000);
  });

  it('sees only the secrets it is given, in its environment and context', async () => {
    process.env.TROUPE_TEST_PARENT_SECRET = 'parent-only';
    try {
      const t = await tool('exports.handler = async (_a, ctx) => ({ env: { ...process.env }, secrets: ctx.secrets });');
      const r = output<{ env: Record<string, string>; secrets: Record<string, string> }>(await run(t, { env: { WEATHER_KEY: 'w-123' } }));
      // runsc sets HOME=/ when the spec has none; nothing of Troupe's own environment comes through.
      assert.deepEqual(r.env, { WEATHER_KEY: 'w-123', TMPDIR: '/tmp', HOME: '/' });
      assert.deepEqual(r.secrets, { WEATHER_KEY: 'w-123' });
    } finally {
      delete process.env.TROUPE_TEST_PARENT_SECRET;
    }
  });

  it('reaches nothing outside with kill(-1)', async () => {
    const t = await tool('exports.handler = async () => { try { process.kill(-1, "SIGKILL"); } catch (e) { return e.code; } return "sent"; };');
    const r = await run(t);
    // Whatever the tool's kill(-1) hit, it was inside its own gVisor kernel: this process and mocha live on.
    assert.ok(r.ok || (r as { kind: string }).kind === 'crash', JSON.stringify(r));
    process.kill(process.pid, 0);
  });

  it('is killed at its timeout, and nothing of the call stays running', async () => {
    const started = Date.now();
    const t = await tool('exports.handler = async () => { while (true) {} };');
    let during: string[] = [];
    const peek = setTimeout(() => (during = runscProcesses()), 1000);
    const r = await run(t, { timeoutMs: 1500 });
    clearTimeout(peek);
    // The check below can see the call's processes: runsc, its gofer and its sandbox were there while it ran.
    assert.ok(during.length >= 2, JSON.stringify(during));
    const took = Date.now() - started;
    assert.equal((r as { kind?: string }).kind, 'timeout', JSON.stringify(r));
    assert.ok(took < 8000, `took ${took} ms`);
    assert.deepEqual(runscProcesses(), []);
  });

  it('reaches out only through its egress proxy when it has internet access, and not at all without', async () => {
    const t = await tool(`import socket
def handler(args, context):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect("/run/troupe/egress.sock")
        s.sendall(b"CONNECT 127.0.0.1:8 HTTP/1.1\\r\\nHost: 127.0.0.1:8\\r\\n\\r\\n")
        return s.recv(64).decode("latin-1").split("\\r\\n")[0]
    except OSError as e:
        return "failed " + type(e).__name__
`, 'tool.py');
    const [on, off] = await Promise.all([run(t, { internetAccess: true }), run(t)]);
    // The proxy answers through the socket bound into gVisor (--host-uds=open), and refuses loopback.
    assert.equal(output(on), 'HTTP/1.1 403 Forbidden');
    assert.equal(output(off), 'failed FileNotFoundError');
  });
});
