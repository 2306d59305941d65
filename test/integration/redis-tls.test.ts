import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { ensureRedisServer } from '../../infra/services/redis-server.js';
import { freePort, startManaged, waitUntil, type ManagedProcess } from '../../infra/services/process.js';
import { createRedis, firstTlsRefusal } from '../../src/lib/redis/connection.js';
import { scriptedAgent } from '../support/agent-fixture.js';
import { requiredEnv, startHarness, type Harness } from '../support/harness.js';
import { json } from '../support/wait.js';

const MAIN = join(__dirname, '../../src/main.js');

/** A CA and a server certificate it signs for 127.0.0.1, made with openssl: the shape of a provider's private CA. */
function makeCertificates(dir: string): { ca: string; cert: string; key: string } {
  const f = (name: string) => join(dir, name);
  const openssl = (args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.crt'), '-days', '1', '-subj', '/CN=troupe-test-redis-ca']);
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', '/CN=127.0.0.1']);
  writeFileSync(f('san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  openssl(['x509', '-req', '-in', f('server.csr'), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f('server.crt'), '-days', '1', '-extfile', f('san.ext')]);
  return { ca: f('ca.crt'), cert: f('server.crt'), key: f('server.key') };
}

/** A TLS handshake and PING, without verification: the server is up and speaks TLS. */
function tlsPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => sock.write('PING\r\n'));
    sock.setTimeout(1000, () => (sock.destroy(), resolve(false)));
    sock.on('error', () => resolve(false));
    sock.on('data', (d: Buffer) => (sock.destroy(), resolve(d.toString().startsWith('+PONG'))));
  });
}

/** `node dist/src/main.js <roles>` until /readyz answers 200 (then SIGTERM) or it exits. */
async function startProcess(roles: string[], env: Record<string, string>, ms = 20_000): Promise<{ code: number | null; stderr: string; stdout: string; ready: boolean }> {
  const port = await freePort();
  const child = spawn(process.execPath, [MAIN, ...roles], { env: { ...process.env, LOG_LEVEL: 'info', PORT: String(port), METRICS_PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const deadline = Date.now() + ms;
  let ready = false;
  while (!ready && child.exitCode === null && Date.now() < deadline) {
    ready = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status === 200, () => false);
    if (!ready) await new Promise((r) => setTimeout(r, 100));
  }
  if (child.exitCode === null) child.kill(ready ? 'SIGTERM' : 'SIGKILL');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  const code = await exited;
  clearTimeout(timer);
  return { code, stderr, stdout, ready };
}

/**
 * Redis over TLS with a certificate the system does not trust (Heroku Redis's are self-signed): a real
 * redis-server listening on TLS only (Debian's is built with TLS), its certificate from a CA made here.
 */
describe('Redis over TLS (rediss://) with a certificate of its own CA', function () {
  this.timeout(60_000);
  let dir: string;
  let certs: { ca: string; cert: string; key: string };
  let redis: ManagedProcess;
  let url: string;
  const base = () => ({ MONGODB_URL: requiredEnv('MONGODB_URL'), TROUPE_MONGODB_DB: 'troupe_redis_tls', TROUPE_REDIS_PREFIX: `tls${process.pid}` });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'troupe-redis-tls-'));
    certs = makeCertificates(dir);
    const port = await freePort();
    // --port 0: no plain listener at all, so nothing below can pass without TLS.
    redis = startManaged('redis-server (tls)', ensureRedisServer(() => undefined), ['--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1', '--tls-cert-file', certs.cert, '--tls-key-file', certs.key, '--tls-ca-cert-file', certs.ca, '--tls-auth-clients', 'no', '--save', '', '--appendonly', 'no', '--dir', dir]);
    await waitUntil(redis, () => tlsPing(port), 10_000);
    url = `rediss://127.0.0.1:${port}`;
  });
  after(async () => {
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the connection reports the refused certificate when verification is on and no CA is given', async () => {
    const conn = createRedis(url, 'command', 'tls-test', { tls: { rejectUnauthorized: true, ca: null } });
    try {
      const refused = await firstTlsRefusal(conn, 5000);
      assert.ok(refused, 'a TLS refusal');
      // redis-server sends its CA along with its certificate: a chain whose root nobody here trusts.
      assert.equal((refused as NodeJS.ErrnoException).code, 'SELF_SIGNED_CERT_IN_CHAIN');
    } finally {
      conn.disconnect();
    }
  });

  for (const [what, env, variable] of [
    ['REDIS_URL', (u: string) => ({ REDIS_URL: u }), 'REDIS_URL'],
    ['REDIS_TLS_URL beside a plain REDIS_URL', (u: string) => ({ REDIS_URL: requiredEnv('REDIS_URL'), REDIS_TLS_URL: u }), 'REDIS_TLS_URL'],
  ] as const) {
    it(`with verification on, the start fails with one line naming ${variable} and the two settings that fix it (${what})`, async () => {
      const started = Date.now();
      const r = await startProcess(['web'], { ...base(), ...env(url) });
      assert.equal(r.code, 1, `${r.stderr}\n${r.stdout.slice(-2000)}`);
      assert.equal(r.ready, false);
      assert.match(
        r.stderr.trimEnd(),
        new RegExp(`^troupe: ${variable}: the Redis server's TLS connection was refused \\(self-signed certificate in certificate chain\\); give the CA that signs its certificate in REDIS_TLS_CA, or set REDIS_TLS_REJECT_UNAUTHORIZED=false for a provider whose certificates are self-signed \\(Heroku Redis\\)$`),
      );
      assert.equal(r.stderr.trimEnd().split('\n').length, 1, `one line, no stack:\n${r.stderr}`);
      assert.ok(Date.now() - started < 15_000, 'fails at once rather than reconnecting');
    });
  }

  it('with REDIS_TLS_REJECT_UNAUTHORIZED=false, a web process starts, says so, and is ready (Redis PINGs on its command and subscriber connections)', async () => {
    const r = await startProcess(['web'], { ...base(), REDIS_TLS_URL: url, REDIS_TLS_REJECT_UNAUTHORIZED: 'false' });
    assert.equal(r.ready, true, `${r.stderr}\n${r.stdout.slice(-3000)}`);
    assert.match(r.stdout, /redis TLS certificate not verified \(REDIS_TLS_REJECT_UNAUTHORIZED=false\)/);
    assert.equal(r.code, 0, r.stderr);
  });

  describe('with REDIS_TLS_CA: every role, BullMQ workers and the pub/sub subscriber included', () => {
    let h: Harness;
    before(async () => {
      // REDIS_TLS_URL wins over the harness's plain REDIS_URL, which is left for its cleanup to scan.
      h = await startHarness({ env: { REDIS_TLS_URL: url, REDIS_TLS_CA: certs.ca, TROUPE_SESSION_SHARDS: '2' } });
    });
    after(async () => h?.close());

    it('runs a session turn end to end over TLS', async () => {
      assert.equal(h.running.core.config.redisUrlVar, 'REDIS_TLS_URL');
      assert.deepEqual(await h.running.core.redis.call('CONFIG', 'GET', 'port'), ['port', '0'], 'the server has no plain port');
      const { agentId } = await scriptedAgent(h, [{ text: 'over tls' }]);
      const s = await json<{ id: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST' }), 201);
      // The sync answer needs the session worker (a BullMQ blocking connection) and the web's subscriber (the ledger's events).
      const done = await json<{ status: string; output: { parts: { text?: string }[] } }>(await h.api(`/v1/sessions/${s.id}/messages/sync`, { method: 'POST', json: { parts: [{ type: 'text', text: 'hi' }] } }), 200);
      assert.equal(done.status, 'completed');
      assert.equal(done.output.parts[0].text, 'over tls');
    });
  });
});
