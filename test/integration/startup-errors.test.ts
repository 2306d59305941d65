import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { requiredEnv } from '../support/harness.js';

const MAIN = join(__dirname, '../../src/main.js');
const PROD_KEY = randomBytes(32).toString('base64');

/** Runs `node dist/src/main.js <role>` until it exits (killed after `ms`); its stderr and exit code. */
function start(role: string, env: Record<string, string>, ms = 20_000): Promise<{ code: number | null; stderr: string; stdout: string }> {
  const child = spawn(process.execPath, [MAIN, role], { env: { ...process.env, LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), ms);
  return new Promise((resolve) => child.once('exit', (code) => (clearTimeout(timer), resolve({ code, stderr, stdout }))));
}

/**
 * What an operator sees when the environment is wrong: the process exits 1
 * with one line that names the variable to fix, not a stack trace.
 */
describe('startup errors an operator fixes in the environment', function () {
  this.timeout(60_000);
  const base = () => ({ MONGODB_URL: requiredEnv('MONGODB_URL'), REDIS_URL: requiredEnv('REDIS_URL'), TROUPE_MONGODB_DB: 'troupe_startup_errors', METRICS_PORT: '0' });
  let taken: Server;
  let takenPort = 0;
  const sockets = new Set<Socket>();
  before(async () => {
    // Holds a port, and takes connections it never answers.
    taken = createServer((s) => sockets.add(s));
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    takenPort = (taken.address() as { port: number }).port;
  });
  after(async () => {
    sockets.forEach((s) => s.destroy());
    await new Promise<void>((r) => taken.close(() => r()));
  });

  const cases: [string, string, () => Record<string, string>, () => RegExp][] = [
    ['a bad value', 'web', () => ({ TROUPE_SESSION_SHARDS: '0' }), () => /^troupe: TROUPE_SESSION_SHARDS must be between 1 and 4096, got 0$/],
    ['PORT taken', 'web', () => ({ PORT: String(takenPort) }), () => new RegExp(`^troupe: PORT: cannot listen on 127\\.0\\.0\\.1:${takenPort}: it is already in use$`)],
    ['ROUTER_PORT taken', 'router', () => ({ ROUTER_PORT: String(takenPort) }), () => new RegExp(`^troupe: ROUTER_PORT: cannot listen on 127\\.0\\.0\\.1:${takenPort}: it is already in use$`)],
    ['METRICS_PORT taken', 'worker', () => ({ METRICS_PORT: String(takenPort), TROUPE_SESSION_SHARDS: '2' }), () => new RegExp(`^troupe: METRICS_PORT: cannot listen on 127\\.0\\.0\\.1:${takenPort}: it is already in use$`)],
    // A listener that never answers the handshake, and a password in the URL: the line names the variable, not the password.
    ['a private-network escape hatch in production without consent', 'web', () => ({ NODE_ENV: 'production', TROUPE_MASTER_KEY: PROD_KEY, PORT: '0', TROUPE_WEBHOOKS_ALLOW_PRIVATE: '1' }), () => /^troupe: TROUPE_WEBHOOKS_ALLOW_PRIVATE lets tenants' URLs reach private networks; with NODE_ENV=production it also needs TROUPE_I_UNDERSTAND_PRIVATE_NETWORKS=1$/],
    ['no MongoDB at MONGODB_URL', 'web', () => ({ MONGODB_URL: `mongodb://troupe:pw-canary-7f3a@127.0.0.1:${takenPort}/x` }), () => /^troupe: MONGODB_URL: could not connect to MongoDB: .+$/],
  ];
  for (const [what, role, env, line] of cases) {
    it(`${what}: exits 1 with one line naming the variable`, async () => {
      const r = await start(role, { ...base(), ...env() });
      assert.equal(r.code, 1, `${r.stderr}\n${r.stdout.slice(-2000)}`);
      assert.match(r.stderr.trimEnd(), line());
      assert.equal(r.stderr.trimEnd().split('\n').length, 1, `one line, no stack:\n${r.stderr}`);
      assert.doesNotMatch(r.stderr + r.stdout, /pw-canary/);
    });
  }

  it('starts with a private-network escape hatch in production once told TROUPE_I_UNDERSTAND_PRIVATE_NETWORKS=1, and logs it', async () => {
    const env = { ...base(), NODE_ENV: 'production', TROUPE_MASTER_KEY: PROD_KEY, PORT: '0', HOST: '127.0.0.1', TROUPE_MODELS_ALLOW_PRIVATE: '1', TROUPE_I_UNDERSTAND_PRIVATE_NETWORKS: '1' };
    const child = spawn(process.execPath, [MAIN, 'web'], { env: { ...process.env, LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      const started = Date.now();
      while (!/web listening/.test(out) && child.exitCode === null && Date.now() - started < 20_000) await new Promise((r) => setTimeout(r, 50));
      assert.equal(child.exitCode, null, out.slice(-2000));
      const line = out.split('\n').find((l) => l.includes('private networks allowed'));
      assert.ok(line, `a line says so:\n${out.slice(-2000)}`);
      assert.deepEqual(JSON.parse(line).allowed, ['TROUPE_MODELS_ALLOW_PRIVATE']);
    } finally {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
  });
});
