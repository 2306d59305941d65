import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MONGO_KINDS } from '../../infra/services/mongo-wire.js';
import { freePort } from '../../infra/services/process.js';
import { dropTestData, requiredEnv, uniqueName } from '../support/harness.js';
import { childrenOf, ended, processGroup } from '../support/proc.js';
import { until } from '../support/wait.js';

const ROOT = join(__dirname, '../../..');
const DEV = join(ROOT, 'dist/infra/services/dev.js');
const CLI = join(ROOT, 'dist/clients/cli/main.js');

/** A program run to its end: exit code and output. */
function runToEnd(args: string[], env: Record<string, string>, cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => (child.kill('SIGKILL'), reject(new Error(`${args.join(' ')} did not exit in time\n${stderr}`))), 30_000);
    child.on('exit', (code) => (clearTimeout(timer), resolve({ code: code ?? -1, stdout, stderr })));
  });
}

/**
 * `npm start` (infra/services/dev.ts, as infra/bin/troupe.js runs it) with its data somewhere other than the
 * checkout's .data/, and the real CLI in another terminal that has the same TROUPE_DATA_DIR: the banner says
 * where the dev keys are, and the CLI finds them there. On the shared test servers, with no demo.
 */
describe('npm start with TROUPE_DATA_DIR, and the CLI', function () {
  this.timeout(90_000);
  const db = uniqueName('troupe_devstart');
  const prefix = uniqueName('td');
  let dir: string;
  let dataDir: string;
  let start: ChildProcess | undefined;
  let banner = '';

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'troupe-devstart-'));
    dataDir = join(dir, 'troupe-data');
    const [port, routerPort] = [await freePort(), await freePort()];
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      MONGODB_URL: requiredEnv('MONGODB_URL'),
      REDIS_URL: requiredEnv('REDIS_URL'),
      TROUPE_MONGODB_DB: db,
      TROUPE_REDIS_PREFIX: prefix,
      TROUPE_DATA_DIR: dataDir,
      PORT: String(port),
      ROUTER_PORT: String(routerPort),
      TROUPE_DEMO: '0',
      TROUPE_SHUTDOWN_TIMEOUT_MS: '2000',
    };
    start = spawn(process.execPath, ['-e', 'require(process.argv[1]).main([])', DEV], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    start.stdout!.on('data', (d: Buffer) => (banner += d.toString()));
    start.stderr!.on('data', (d: Buffer) => (banner += d.toString()));
    await until(async () => banner.includes('Ctrl-C stops Troupe') || start!.exitCode !== null, 60_000);
    assert.match(banner, /Troupe is running/, banner);
  });
  after(async () => {
    if (start && start.exitCode === null) {
      const exited = new Promise((r) => start!.once('exit', r));
      start.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
      if (start.exitCode === null) start.kill('SIGKILL');
    }
    await dropTestData(requiredEnv('MONGODB_URL'), db, requiredEnv('REDIS_URL'), prefix);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('tells the truth about where the dev keys are, and the CLI with the same TROUPE_DATA_DIR uses them', async () => {
    const keysFile = join(dataDir, 'dev-keys.json');
    const line = banner.split('\n').find((l) => l.includes('dev keys:'));
    assert.equal(line?.trim(), `dev keys:     ${keysFile} (the CLI's default profile where TROUPE_DATA_DIR=${dataDir} is set)`);
    // Another terminal, outside the checkout: no .data/ to find upwards, nothing configured but the data folder.
    const cliEnv = { PATH: process.env.PATH ?? '', HOME: dir, TROUPE_CONFIG: join(dir, 'config.json'), TROUPE_DATA_DIR: dataDir };
    const config = await runToEnd([CLI, 'config'], cliEnv, dir);
    assert.equal(config.code, 0, config.stderr);
    assert.match(config.stdout, new RegExp(`${keysFile.replace(/[.]/g, '\\.')}`));
    const listed = await runToEnd([CLI, 'sessions', 'list', '--json'], cliEnv, dir);
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(JSON.parse(listed.stdout).sessions, [], 'a real answer from the running stack, with its dev key');
    // Without it, the CLI says where it looked instead of using a key from somewhere else.
    const { TROUPE_DATA_DIR: _, ...without } = cliEnv;
    const none = await runToEnd([CLI, 'sessions', 'list'], without, dir);
    assert.equal(none.code, 2, none.stderr);
    assert.match(none.stderr, /No base URL configured/);
  });
});

/**
 * Ctrl-C on `npm start` with its own local servers: a terminal signals its whole foreground process group. The
 * servers are not in it, so the roles close on working servers (no connection warnings while they drain), and the
 * launcher stops the servers after them. The stop is read from the launcher's own output and from /proc.
 */
describe('npm start: Ctrl-C stops the roles first, then the local servers', function () {
  this.timeout(90_000);
  let dir: string;
  let start: ChildProcess | undefined;

  before(function () {
    // The server this leg runs; a leg given by MONGODB_URL has no local kind to start.
    if (!(MONGO_KINDS as readonly string[]).includes(process.env.TROUPE_TEST_MONGO_KIND ?? '')) this.skip();
    dir = mkdtempSync(join(tmpdir(), 'troupe-ctrlc-'));
  });
  after(() => {
    if (start && start.exitCode === null && start.signalCode === null) start.kill('SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the servers outlive the roles and are gone when npm start exits; no warning on the way out', async () => {
    const [port, routerPort] = [await freePort(), await freePort()];
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      TROUPE_DATA_DIR: join(dir, 'data'),
      TROUPE_LOCAL_MONGO: process.env.TROUPE_TEST_MONGO_KIND!,
      PORT: String(port),
      ROUTER_PORT: String(routerPort),
      TROUPE_DEMO: '0',
      // The roles keep serving a second after the signal and sweep every 200 ms: a server gone meanwhile shows.
      TROUPE_DRAIN_DELAY_MS: '1000',
      TROUPE_SWEEP_INTERVAL_MS: '200',
    };
    // detached: a group of its own, as a terminal's foreground job is.
    start = spawn(process.execPath, ['-e', 'require(process.argv[1]).main([])', DEV], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    start.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    start.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((r) => start!.once('exit', (code) => r(code)));
    await until(async () => output.includes('Ctrl-C stops Troupe') || start!.exitCode !== null, 60_000);
    assert.match(output, /Troupe is running/, output);
    const launcher = start.pid!;
    // The servers are the launcher's children that are not a watchdog (sh).
    const servers = childrenOf(launcher).filter((p) => p.comm !== 'sh');
    assert.equal(servers.length, 2, JSON.stringify(childrenOf(launcher)));
    for (const s of servers) assert.notEqual(s.pgrp, processGroup(launcher), `${s.comm} runs outside the terminal's group`);
    const banner = output.length;

    process.kill(-launcher, 'SIGINT');
    const code = await Promise.race([exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 30_000))]);
    assert.equal(code, 0, output);
    assert.equal(output.slice(banner).trim(), '', 'nothing logged while stopping (LOG_LEVEL=warn)');
    for (const s of servers) assert.ok(ended(s.pid), `${s.comm} (${s.pid}) stopped before npm start exited`);
  });

  it('npm start killed with SIGKILL takes Troupe and both servers with it', async () => {
    const [port, routerPort] = [await freePort(), await freePort()];
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      TROUPE_DATA_DIR: join(dir, 'data-npm'),
      ...(process.env.TROUPE_TEST_MONGO_KIND ? { TROUPE_LOCAL_MONGO: process.env.TROUPE_TEST_MONGO_KIND } : {}),
      PORT: String(port),
      ROUTER_PORT: String(routerPort),
      TROUPE_DEMO: '0',
      TROUPE_SHUTDOWN_TIMEOUT_MS: '2000',
      // What npm puts in a script's environment; npm runs the script through `sh -c`, as this stand-in does.
      npm_lifecycle_event: 'start',
    };
    const script = `"${process.execPath}" -e 'require(process.argv[1]).main([])' "${DEV}"`;
    const npm = spawn(process.execPath, ['-e', `const c = require('node:child_process').spawn('sh', ['-c', process.argv[1]], { stdio: 'inherit' }); console.log('sh=' + c.pid); setInterval(() => {}, 1000)`, script], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    npm.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    npm.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    let pids: number[] = [];
    try {
      await until(async () => output.includes('Ctrl-C stops Troupe') || npm.exitCode !== null, 60_000);
      assert.match(output, /Troupe is running/, output);
      const sh = Number(/sh=(\d+)/.exec(output)![1]);
      const [launcher] = childrenOf(sh).filter((p) => p.comm !== 'sh');
      assert.ok(launcher, `the launcher runs under npm's shell: ${JSON.stringify(childrenOf(sh))}`);
      const servers = childrenOf(launcher.pid).filter((p) => p.comm !== 'sh');
      assert.equal(servers.length, 2, JSON.stringify(childrenOf(launcher.pid)));
      pids = [sh, launcher.pid, ...servers.map((s) => s.pid)];

      npm.kill('SIGKILL');
      const killed = Date.now();
      await until(async () => pids.every(ended), 20_000).catch(() => undefined);
      const left = pids.filter((p) => !ended(p));
      assert.deepEqual(left, [], `still running ${Date.now() - killed} ms after npm was killed: launcher ${launcher.pid}, servers ${servers.map((s) => `${s.comm} ${s.pid}`).join(', ')}`);
    } finally {
      npm.kill('SIGKILL');
      for (const p of pids) if (!ended(p)) process.kill(p, 'SIGKILL');
    }
  });
});

