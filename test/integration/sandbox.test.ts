import assert from 'node:assert/strict';
import { chmod, chown, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configureSandbox, hostSandbox, sandboxCapabilities, sandboxPolicy } from '../../src/lib/sandbox/capabilities.js';
import { runInSandbox } from '../../src/lib/sandbox/run.js';
import { binaryAndLibraries } from '../../src/lib/sandbox/runtimes.js';
import type { SandboxRequest, SandboxResult } from '../../src/lib/sandbox/types.js';
import { SANDBOX_UID } from '../../src/lib/sandbox/types.js';

/** A version directory holding one handler module, plus a scratch dir, per test. */
async function tool(base: string, source: string, file = 'tool.js'): Promise<Pick<SandboxRequest, 'rootDir' | 'handlerPath' | 'scratchDir'>> {
  const rootDir = await mkdtemp(join(base, 'version-'));
  await chmod(rootDir, 0o755); // as VersionFiles does: the sandbox user must read it
  const scratchDir = await mkdtemp(join(base, 'scratch-'));
  if (hostSandbox().user === 'dropped') await chown(scratchDir, SANDBOX_UID, SANDBOX_UID);
  await writeFile(join(rootDir, file), source);
  return { rootDir, handlerPath: join(rootDir, file), scratchDir };
}

function run(t: Pick<SandboxRequest, 'rootDir' | 'handlerPath' | 'scratchDir'>, over: Partial<SandboxRequest> = {}): Promise<SandboxResult> {
  return runInSandbox({ ...t, args: {}, env: {}, timeoutMs: 10_000, memoryMb: 128, internetAccess: false, ...over });
}

function output<T>(r: SandboxResult): T {
  assert.equal(r.ok, true, JSON.stringify(r));
  return (r as { output: T }).output;
}

describe('sandbox', function () {
  let base: string;

  before(async () => {
    base = await mkdtemp(join(tmpdir(), 'troupe-sbx-test-'));
    await chmod(base, 0o755);
  });
  after(async () => {
    await rm(base, { recursive: true, force: true });
  });

  it('calls the handler with the arguments and returns its JSON result', async () => {
    const t = await tool(base, 'exports.handler = async ({ a, b }) => { console.log("noise on stdout"); return { sum: a + b }; };');
    assert.deepEqual(output(await run(t, { args: { a: 2, b: 3 } })), { sum: 5 });
  });

  it('runs an ES module handler', async () => {
    const t = await tool(base, 'export async function handler(args) { return { got: args.x }; }', 'tool.mjs');
    assert.deepEqual(output(await run(t, { args: { x: 'y' } })), { got: 'y' });
  });

  it('turns a thrown error into an error result and a process exit into a crash', async () => {
    const thrown = await run(await tool(base, 'exports.handler = async () => { throw new Error("no such city"); };'));
    assert.deepEqual(thrown, { ok: false, kind: 'error', error: 'Error: no such city' });
    const exited = await run(await tool(base, 'exports.handler = async () => { process.exit(3); };'));
    assert.equal(exited.ok, false);
    assert.equal((exited as { kind: string }).kind, 'crash');
  });

  it('sees only its runtime, version and scratch; cannot spawn processes or write its own files', async () => {
    const outside = await mkdtemp(join(base, 'outside-'));
    await writeFile(join(outside, 'secret.txt'), 'top secret');
    await mkdir(join(base, 'unused'), { recursive: true });
    const t = await tool(
      base,
      `const fs = require('fs');
       const attempt = (f) => { try { return f(); } catch (e) { return e.code; } };
       exports.handler = async ({ outside }, ctx) => ({
         hostname: attempt(() => fs.readFileSync('/etc/hostname', 'utf8')),
         outside: attempt(() => fs.readFileSync(outside, 'utf8')),
         listing: attempt(() => fs.readdirSync('/')),
         own: attempt(() => fs.readFileSync(__filename, 'utf8').length > 0),
         writeOwn: attempt(() => fs.writeFileSync(__dirname + '/x.txt', 'x')),
         scratch: attempt(() => { fs.writeFileSync(ctx.scratchDir + '/s.txt', 'ok'); return fs.readFileSync(ctx.scratchDir + '/s.txt', 'utf8'); }),
         scratchDir: ctx.scratchDir,
         child: attempt(() => require('child_process').execSync('id').toString()),
         binding: attempt(() => process.binding('fs')),
       });`,
    );
    const r = output<Record<string, unknown>>(await run(t, { args: { outside: join(outside, 'secret.txt') } }));
    // The host path is not in its mount namespace at all; Node's permission model refuses the rest first.
    const runtimeTops = binaryAndLibraries(process.execPath).map((p) => p.split('/')[1]);
    const listing = [...new Set(['agent', 'dev', 'proc', 'run', 'tmp', ...runtimeTops])].sort();
    assert.deepEqual(r, { hostname: 'ERR_ACCESS_DENIED', outside: 'ENOENT', listing, own: true, writeOwn: 'ERR_ACCESS_DENIED', scratch: 'ok', scratchDir: '/tmp', child: 'ERR_ACCESS_DENIED', binding: 'ERR_ACCESS_DENIED' });
  });

  describe('network', function () {
    let server: Server;
    let url: string;
    let hits = 0;
    const source = `const http = require('http');
      exports.handler = ({ url }) => new Promise((resolve) => {
        const fail = (e) => resolve({ reached: false, code: (e && (e.code || (e.cause && e.cause.code))) || String(e) });
        try {
          http.get(url, (res) => { let b = ''; res.on('data', (c) => (b += c)); res.on('end', () => resolve({ reached: true, body: b })); }).on('error', fail);
        } catch (e) { fail(e); }
      });`;

    before(async () => {
      server = createServer((_req, res) => {
        hits++;
        res.end('hello from loopback');
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    });
    after(async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    });

    it('cannot reach it with internet access on either: its own network namespace has no way to the host', async () => {
      const before = hits;
      const r = output<{ reached: boolean; code: string }>(await run(await tool(base, source), { args: { url }, internetAccess: true }));
      assert.equal(r.reached, false);
      assert.match(r.code, /ECONNREFUSED|ENETUNREACH/);
      assert.equal(hits, before);
    });

    it('cannot reach it when internet access is off, whatever the host enforces', async () => {
      const before = hits;
      const r = output<{ reached: boolean }>(await run(await tool(base, source), { args: { url } }));
      assert.equal(r.reached, false);
      assert.equal(hits, before);
    });

    describe('legacy wrappers (TROUPE_SANDBOX=legacy, hosts without bwrap)', function () {
      let was: ReturnType<typeof sandboxPolicy>;
      before(() => {
        was = sandboxPolicy();
        configureSandbox({ ...was, mode: 'legacy' });
      });
      after(() => configureSandbox(was));

      it('cannot reach it from the legacy network namespace, internet access or not', async function () {
        // Required, not optional: `npm test` needs a host with network namespaces (bwrap needs them too), and a
        // skip here would pass a run that never tried the legacy wrapper's isolation.
        const isolation = hostSandbox().network_isolation;
        assert.equal(isolation, 'namespace', `this host gives no network namespace (network_isolation: ${isolation}); the tests need one: allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 / user.max_user_namespaces > 0) or run as root`);
        const before = hits;
        for (const internetAccess of [false, true]) {
          const r = output<{ reached: boolean; code: string }>(await run(await tool(base, source), { args: { url }, networkIsolation: 'namespace', internetAccess }));
          assert.equal(r.reached, false);
          assert.match(r.code, /ECONNREFUSED|ENETUNREACH/);
        }
        assert.equal(hits, before);
      });

      it('cannot reach it, resolve names or fetch under the runtime guard', async () => {
        const before = hits;
        const r = output<{ reached: boolean; code: string }>(await run(await tool(base, source), { args: { url }, networkIsolation: 'runtime-guard' }));
        assert.deepEqual(r, { reached: false, code: 'ERR_SANDBOX_NETWORK' });
        const other = await tool(
          base,
          `const attempt = async (f) => { try { await f(); return 'allowed'; } catch (e) { return e.code; } };
           exports.handler = async ({ url }) => ({
             fetch: await attempt(() => fetch(url)),
             dns: await attempt(() => require('dns').promises.lookup('localhost')),
             // Putting a harmless connect back must not reopen the network.
             restore: await attempt(() => {
               const net = require('net');
               try { net.Socket.prototype.connect = function () { return this; }; } catch {}
               try { Object.defineProperty(net.Socket.prototype, 'connect', { value: function () { return this; } }); } catch {}
               return new Promise((res, rej) => net.connect(Number(new URL(url).port), '127.0.0.1').on('connect', res).on('error', rej));
             }),
           });`
        );
        assert.deepEqual(output(await run(other, { args: { url }, networkIsolation: 'runtime-guard' })), { fetch: 'ERR_SANDBOX_NETWORK', dns: 'ERR_SANDBOX_NETWORK', restore: 'ERR_SANDBOX_NETWORK' });
        assert.equal(hits, before);
      });
    });
  });

  it('sees only the secrets it is given, in its environment and context', async () => {
    process.env.TROUPE_TEST_PARENT_SECRET = 'parent-only';
    try {
      const t = await tool(base, 'exports.handler = async (_a, ctx) => ({ env: { ...process.env }, secrets: ctx.secrets, tmp: require("os").tmpdir() === ctx.scratchDir });');
      const r = output<{ env: Record<string, string>; secrets: Record<string, string>; tmp: boolean }>(await run(t, { env: { WEATHER_KEY: 'w-123', NODE_OPTIONS: '--allow-fs-read=*' } }));
      assert.deepEqual(r.env, { WEATHER_KEY: 'w-123', TMPDIR: '/tmp' });
      assert.equal(r.tmp, true);
      assert.deepEqual(r.secrets, { WEATHER_KEY: 'w-123', NODE_OPTIONS: '--allow-fs-read=*' });
    } finally {
      delete process.env.TROUPE_TEST_PARENT_SECRET;
    }
  });

  it('is killed at its timeout, busy or idle', async () => {
    for (const body of ['while (true) {}', 'await new Promise(() => setInterval(() => {}, 1000));']) {
      const started = Date.now();
      const r = await run(await tool(base, `exports.handler = async () => { ${body} };`), { timeoutMs: 1000 });
      const took = Date.now() - started;
      assert.equal((r as { kind?: string }).kind, 'timeout', JSON.stringify(r));
      assert.ok(took >= 1000 && took < 4000, `took ${took} ms`);
    }
  });

  it('is stopped when it exceeds its memory cap, on the heap or in buffers', async () => {
    const heap = await run(await tool(base, 'exports.handler = async () => { const a = []; for (;;) a.push(new Array(1e5).fill(Math.random())); };'), { memoryMb: 64 });
    assert.equal((heap as { kind?: string }).kind, 'memory', JSON.stringify(heap));
    if (hostSandbox().rlimits !== 'prlimit') return;
    const buffers = await run(await tool(base, 'exports.handler = async () => { const a = []; for (;;) a.push(Buffer.alloc(16 * 1024 * 1024, 1)); };'), { memoryMb: 64 });
    assert.equal((buffers as { kind?: string }).kind, 'memory', JSON.stringify(buffers));
  });

  it('keeps nothing of what a tool writes to stdout and only a tail of its stderr', async () => {
    // 64 MiB on each: stdout goes nowhere, stderr keeps its last 8 KiB, so the call costs the worker no memory for them.
    const t = await tool(base, 'exports.handler = async () => { const s = "z".repeat(1 << 20); for (let i = 0; i < 64; i++) { process.stdout.write(s); process.stderr.write(s); } return { done: true }; };');
    assert.deepEqual(output(await run(t, { timeoutMs: 20_000 })), { done: true });
  });

  it('refuses a result over the output cap', async () => {
    const t = await tool(base, 'exports.handler = async ({ n }) => "x".repeat(n);');
    for (const over of [{ args: { n: 300 * 1024 } }, { args: { n: 2000 }, outputLimitBytes: 1024 }]) {
      const r = await run(t, over);
      assert.equal((r as { kind?: string }).kind, 'output_too_large', JSON.stringify(r));
    }
    assert.equal(output(await run(t, { args: { n: 10 } })), 'xxxxxxxxxx');
  });

  it('runs under bwrap with seccomp on this host (npm test installs bubblewrap)', () => {
    const caps = sandboxCapabilities();
    assert.equal(caps.level, 'bwrap-seccomp', `bwrap is not usable: ${hostSandbox().bwrapError}`);
    assert.equal(caps.seccomp, true);
    assert.equal(caps.fs, 'bwrap-mount-namespace');
    assert.equal(caps.network_isolation, 'namespace');
    assert.equal(caps.scratch_quota_mb, sandboxPolicy().scratchMb);
    assert.equal(Object.keys(caps).sort().join(','), 'fs,level,network_isolation,process_limit,rlimits,scratch_quota_mb,seccomp,user');
  });
});

describe('sandbox at /healthz', function () {
  it('reports the enforcement level in force', async () => {
    const { startHarness } = await import('../support/harness.js');
    const h = await startHarness({ roles: ['web'] });
    try {
      const res = await fetch(`${h.baseUrl}/healthz`);
      const body = (await res.json()) as { status: string; sandbox: unknown };
      assert.equal(body.status, 'ok');
      assert.deepEqual(body.sandbox, sandboxCapabilities());
    } finally {
      await h.close();
    }
  });
});

describe('sandbox policy at start', function () {
  const logs: { level: string; obj: Record<string, unknown>; msg: string }[] = [];
  const log = { info: (obj: object, msg: string) => logs.push({ level: 'info', obj: obj as Record<string, unknown>, msg }), warn: (obj: object, msg: string) => logs.push({ level: 'warn', obj: obj as Record<string, unknown>, msg }) };
  let was: ReturnType<typeof sandboxPolicy>;
  before(() => (was = sandboxPolicy()));
  afterEach(() => {
    configureSandbox(was);
    logs.length = 0;
  });

  it('refuses a weak sandbox in production unless TROUPE_SANDBOX_ALLOW_WEAK=1, and logs the choice', async () => {
    const { enforceSandboxPolicy, WeakSandboxError } = await import('../../src/lib/sandbox/policy.js');
    const weak = { mode: 'legacy', scratchMb: 64, production: true, allowWeak: false } as const;
    assert.throws(() => enforceSandboxPolicy(weak, log), (e: unknown) => e instanceof WeakSandboxError && /TROUPE_SANDBOX_ALLOW_WEAK/.test(e.message));
    const caps = enforceSandboxPolicy({ ...weak, allowWeak: true }, log);
    assert.notEqual(caps.level, 'bwrap-seccomp');
    assert.deepEqual(logs.map((l) => [l.level, l.obj.allow_weak]), [['warn', true]]);
    // Outside production a weak host warns but runs.
    assert.equal(enforceSandboxPolicy({ ...weak, production: false }, log).level, caps.level);
    assert.deepEqual(logs.map((l) => [l.level, l.obj.allow_weak]), [['warn', true], ['warn', false]]);
  });

  it('starts in production on this host, at bwrap-seccomp, and says so', async () => {
    const { enforceSandboxPolicy } = await import('../../src/lib/sandbox/policy.js');
    const caps = enforceSandboxPolicy({ mode: 'auto', scratchMb: 32, production: true, allowWeak: false }, log);
    assert.equal(caps.level, 'bwrap-seccomp');
    assert.equal(caps.scratch_quota_mb, 32);
    assert.deepEqual(logs.map((l) => [l.level, l.msg]), [['info', 'sandbox in force']]);
  });
});
