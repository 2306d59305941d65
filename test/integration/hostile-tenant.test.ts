/**
 * A hostile tenant's tool or entrypoint tries one escape per case; each case
 * asserts the escape is refused, Troupe keeps serving, and another tenant's
 * call running at the same time completes. These run straight through
 * runInSandbox without Node's permission model (the OS sandbox alone); the
 * cases through the real API and tool-runner are in hostile-tenant-api.test.ts.
 * The egress and Python cases extend these describes with the helpers in
 * test/support/hostile-tools.ts.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { realpathSync } from 'node:fs';
import { hostSandbox, sandboxPolicy } from '../../src/lib/sandbox/capabilities.js';
import { MAX_PROCESSES } from '../../src/lib/sandbox/bwrap.js';
import { ATTEMPT, hostileVersion, outputOf, runHostile } from '../support/hostile-tools.js';
import { processesWith } from '../support/proc.js';

/** Another tenant's ordinary call, started alongside an attack: it must still answer. */
const NEIGHBOUR = `exports.handler = async ({ ms }) => { await new Promise((r) => setTimeout(r, ms)); return { neighbour: 'ok' }; };`;

describe('hostile tenant', function () {
  let base: string;

  before(async function () {
    assert.equal(hostSandbox().level, 'bwrap-seccomp', `the suite needs bwrap: ${hostSandbox().bwrapError}`);
    base = await mkdtemp(join(tmpdir(), 'troupe-hostile-'));
    await chmod(base, 0o755);
  });
  after(async () => {
    await rm(base, { recursive: true, force: true });
  });

  /** Runs the attack and a neighbour call at once; returns the attack's result once both are done. */
  async function alongside<T>(attack: Promise<T>, neighbourMs = 500): Promise<T> {
    const [r, n] = await Promise.all([attack, runHostile(base, NEIGHBOUR, { ms: neighbourMs })]);
    assert.deepEqual(outputOf(n), { neighbour: 'ok' }, 'the other tenant\'s call completes');
    return r;
  }

  it('runs under seccomp, and a call to a denied syscall (unshare) fails with EPERM', async () => {
    const unshare = realpathSync('/usr/bin/unshare');
    const r = outputOf<{ seccomp: string; unshare: string }>(
      await runHostile(base, `${ATTEMPT}
        exports.handler = async ({ unshare }) => ({
          seccomp: fs.readFileSync('/proc/self/status', 'utf8').match(/^Seccomp:\\s*(\\d)/m)[1],
          unshare: attempt(() => require('child_process').execFileSync(unshare, ['--user', '--', unshare], { stdio: 'pipe' }).toString()) ,
        });`, { unshare }, { binaries: [unshare] }),
    );
    assert.equal(r.seccomp, '2');
    assert.match(r.unshare, /Operation not permitted|EPERM|Command failed/);
  });

  it('cannot read another call\'s scratch, running at the same time', async () => {
    const victim = runHostile(base, `exports.handler = async () => { require('fs').writeFileSync('/tmp/secret.txt', 'victim-secret'); await new Promise((r) => setTimeout(r, 1000)); return require('fs').readFileSync('/tmp/secret.txt', 'utf8'); };`);
    await new Promise((r) => setTimeout(r, 400));
    const thief = outputOf<{ own: string; procs: string[]; found: string[] }>(
      await runHostile(base, `${ATTEMPT}
        exports.handler = async () => {
          const found = [];
          // Everything it can see but the runtime's own files, /proc and /dev.
          const skip = new Set(['/usr', '/lib', '/lib64', '/proc', '/dev']);
          const walk = (d, depth) => { if (depth > 6) return; for (const n of [].concat(attempt(() => fs.readdirSync(d)))) { if (typeof n !== 'string') continue; const p = (d === '/' ? '' : d) + '/' + n; if (skip.has(p)) continue; const st = attempt(() => fs.statSync(p)); if (st && st.isDirectory && st.isDirectory()) walk(p, depth + 1); else if (st && st.size < 1e6 && attempt(() => fs.readFileSync(p, 'utf8')) === 'victim-secret') found.push(p); } };
          walk('/', 0);
          return { own: attempt(() => fs.readFileSync('/tmp/secret.txt', 'utf8')), procs: fs.readdirSync('/proc').filter((n) => /^\\d+$/.test(n)), found };
        };`),
    );
    assert.equal(thief.own, 'ENOENT');
    assert.deepEqual(thief.found, []);
    assert.ok(thief.procs.length <= 2, `sees only its own PID namespace: ${thief.procs}`);
    assert.equal(outputOf(await victim), 'victim-secret');
    assert.deepEqual(await readdir(base).then((d) => d.filter((n) => n.startsWith('secret'))), []);
  });

  it('finds no Troupe secret in its environment or any /proc/*/environ, nor /etc/shadow', async () => {
    const marker = `troupe-master-${Date.now()}`;
    process.env.TROUPE_MASTER_KEY_HOSTILE_TEST = marker;
    try {
      const r = outputOf<{ environs: Record<string, string>; env: Record<string, string>; shadow: string; passwd: string; parent: string }>(
        await alongside(runHostile(base, `${ATTEMPT}
          exports.handler = async () => {
            const environs = {};
            for (const p of fs.readdirSync('/proc').filter((n) => /^\\d+$/.test(n))) environs[p] = attempt(() => fs.readFileSync('/proc/' + p + '/environ', 'utf8'));
            return { environs, env: { ...process.env }, shadow: attempt(() => fs.readFileSync('/etc/shadow', 'utf8')), passwd: attempt(() => fs.readFileSync('/etc/passwd', 'utf8')),
                     parent: attempt(() => fs.readFileSync('/proc/' + process.ppid + '/environ', 'utf8')) };
          };`, {}, { req: { env: { OWN_SECRET: 'mine' } } })),
      );
      const everything = JSON.stringify(r);
      assert.ok(!everything.includes(marker), 'the master key marker leaked');
      assert.ok(!everything.includes('MONGODB_URL') && !everything.includes('REDIS_URL'));
      assert.deepEqual(r.env, { OWN_SECRET: 'mine', TMPDIR: '/tmp' });
      assert.equal(r.shadow, 'ENOENT');
      assert.equal(r.passwd, 'ENOENT');
      assert.ok(Object.keys(r.environs).length <= 2, `other processes visible: ${Object.keys(r.environs)}`);
    } finally {
      delete process.env.TROUPE_MASTER_KEY_HOSTILE_TEST;
    }
  });

  it('kill(-1) and signals to its parent reach nothing outside its own sandbox', async () => {
    const bystander = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      const r = outputOf<{ ppid: number; parent: unknown; one: unknown; minusOne: unknown }>(
        await alongside(
          runHostile(base, `${ATTEMPT}
            exports.handler = async () => {
              const out = { ppid: process.ppid, parent: attempt(() => process.kill(process.ppid, 'SIGTERM')), one: attempt(() => process.kill(1, 'SIGKILL')) };
              // Every process it may signal but itself and its namespace's init: there are none.
              return { ...out, minusOne: attempt(() => process.kill(-1, 'SIGKILL')) };
            };`),
          800,
        ),
      );
      // Its parent is its own sandbox's init (pid 1 of its PID namespace), never a Troupe process.
      assert.equal(r.ppid, 1);
      assert.equal(r.minusOne, 'ESRCH');
      assert.equal(bystander.exitCode, null);
      assert.equal(process.kill(bystander.pid!, 0), true, 'a host process outlived kill(-1)');
    } finally {
      bystander.kill('SIGKILL');
    }
  });

  it('a fork bomb stops at its process limit and the host and other calls carry on', async function () {
    this.timeout(20_000);
    const sh = realpathSync('/bin/sh');
    const started = Date.now();
    const r = outputOf<{ peak: number; failures: boolean }>(
      await alongside(
        runHostile(base, `
          exports.handler = async ({ sh }) => {
            const child = require('child_process').spawn(sh, ['-c', 'b() { b & b & wait; }; b'], { stdio: ['ignore', 'ignore', 'pipe'] });
            let stderr = '';
            child.stderr.on('data', (c) => { if (stderr.length < 4096) stderr += c; });
            let peak = 0;
            // Until forks are refused and it has grown (3 s at most: a loaded host ramps slowly).
            for (let i = 0; i < 30 && !(peak >= 10 && /fork|resource/i.test(stderr)); i++) { await new Promise((r) => setTimeout(r, 100)); peak = Math.max(peak, require('fs').readdirSync('/proc').filter((n) => /^\\d+$/.test(n)).length); }
            return { peak, failures: /fork|resource/i.test(stderr), stderr: stderr.slice(0, 300), exit: child.exitCode };
          };`, { sh }, { binaries: [sh] }),
        1000,
      ),
    );
    // Bounded near the cap, not exactly at it: exiting children count until reaped, and the kernel counts per
    // user-namespace level (seen here: up to 74 for a cap of 64). Without the cap it grows without end.
    assert.ok(r.peak <= 2 * MAX_PROCESSES, `${r.peak} processes`);
    // dash gives up on "Cannot fork", so the bomb may be over before the first look at /proc; the refusals show it hit the cap.
    assert.equal(r.failures, true, `forks were refused: ${JSON.stringify(r)}`);
    // One that never returns is killed at its timeout, and nothing of it survives on the host.
    const marker = `troupe-bomb-${process.pid}-${Date.now()}`;
    const stuck = await runHostile(base, `exports.handler = async ({ sh, marker }) => { require('child_process').spawn(sh, ['-c', 'b() { b & b & wait; }; b', marker], { stdio: 'ignore' }); await new Promise(() => setInterval(() => {}, 1000)); };`, { sh, marker }, { binaries: [sh], req: { timeoutMs: 1500 } });
    assert.equal((stuck as { kind?: string }).kind, 'timeout', JSON.stringify(stuck));
    let left = processesWith(marker);
    for (let i = 0; i < 20 && left.length; i++, left = processesWith(marker)) await new Promise((res) => setTimeout(res, 100));
    assert.deepEqual(left, [], 'processes of a finished call are left on the host');
    assert.ok(Date.now() - started < 15_000);
  });

  it('filling the disk stops at the scratch quota; the host folder stays empty', async function () {
    this.timeout(20_000);
    const v = await hostileVersion(base, 'x');
    const r = outputOf<{ code: string; mb: number }>(
      await alongside(runHostile(base, `
        exports.handler = async () => {
          const fs = require('fs'); const chunk = Buffer.alloc(1024 * 1024, 1); let mb = 0;
          try { for (; mb < 4096; mb++) fs.writeFileSync('/tmp/f' + mb, chunk); } catch (e) { return { code: e.code, mb }; }
          return { code: 'none', mb };
        };`, {}, { req: { scratchDir: v.scratchDir } })),
    );
    assert.equal(r.code, 'ENOSPC');
    assert.ok(r.mb <= sandboxPolicy().scratchMb, `${r.mb} MiB written`);
    assert.deepEqual(await readdir(v.scratchDir), [], 'nothing reached the host');
  });

  it('cannot write outside scratch: its version, / and the runtime are read-only', async () => {
    const v = await hostileVersion(base, `${ATTEMPT}
      exports.handler = async () => ({
        own: attempt(() => fs.writeFileSync(__filename, 'pwned')),
        version: attempt(() => fs.writeFileSync('/agent/new.js', 'x')),
        root: attempt(() => fs.writeFileSync('/evil', 'x')),
        node: attempt(() => fs.writeFileSync(process.execPath, 'x')),
        dev: attempt(() => fs.writeFileSync('/dev/evil', 'x')),
        mkdir: attempt(() => fs.mkdirSync('/run/x')),
      });`);
    const before = await readFile(v.handlerPath, 'utf8');
    const { runInSandbox, SANDBOX_FILES } = await import('../../src/lib/sandbox/run.js');
    const { nodeRuntime } = await import('../../src/lib/sandbox/runtimes.js');
    const req = { ...v, args: {}, env: {}, timeoutMs: 10_000, memoryMb: 128, internetAccess: false };
    const r = outputOf<Record<string, string>>(await runInSandbox(req, SANDBOX_FILES, { runtime: nodeRuntime(SANDBOX_FILES, { memoryMb: 128, storage: false, permissionModel: false }) }));
    for (const [k, code] of Object.entries(r)) assert.match(code, /EROFS|EACCES|EPERM/, `${k}: ${code}`);
    assert.equal(await readFile(v.handlerPath, 'utf8'), before);
  });

  it('with internet access off or on (until the egress proxy), cannot connect to Troupe\'s Redis on 127.0.0.1', async () => {
    const port = Number(new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379').port || 6379);
    const source = `exports.handler = ({ port }) => new Promise((resolve) => {
      const s = require('net').connect(port, '127.0.0.1');
      s.on('connect', () => { s.write('PING\\r\\n'); s.once('data', (d) => resolve({ reached: String(d) })); });
      s.on('error', (e) => resolve({ refused: e.code }));
    });`;
    for (const internetAccess of [false, true]) {
      const r = outputOf<{ refused?: string; reached?: string }>(await runHostile(base, source, { port }, { req: { internetAccess } }));
      assert.equal(r.reached, undefined, `internet_access ${internetAccess} reached Redis`);
      assert.match(r.refused!, /ECONNREFUSED|ENETUNREACH/);
    }
  });
});
