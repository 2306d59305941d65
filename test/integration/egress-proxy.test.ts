import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseRedisTarget } from '../../src/lib/redis/target.js';
import { OwnAddresses, type EgressRefusalReason } from '../../src/lib/net/egress-guard.js';
import { startEgressProxy, type EgressProxy, type EgressProxyOptions } from '../../src/lib/net/egress-proxy.js';
import type { Resolver } from '../../src/lib/net/resolver.js';
import { ownEndpoints } from '../../src/lib/sandbox/egress.js';
import { nodeClient, pythonClient, type Attempt } from '../support/egress-clients.js';
import { requiredEnv } from '../support/harness.js';

/** Test names → the addresses a hostile DNS answer would give; anything else goes to the system resolver. */
function resolverOf(table: Record<string, string[]>): Resolver {
  return async (host) => {
    const list = table[host];
    if (!list) throw Object.assign(new Error(`ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }) as const);
  };
}

/** A raw request over the proxy's socket, as a client library would send it; resolves with the status line and the rest. */
function rawRequest(socketPath: string, head: string, opts: { holdMs?: number } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(socketPath);
    let got = '';
    s.on('data', (c: Buffer) => (got += c.toString('latin1')));
    s.on('error', reject);
    s.on('close', () => resolve(got));
    s.write(head);
    if (opts.holdMs === undefined) s.setTimeout(5000, () => s.destroy());
  });
}

describe('egress proxy and the in-sandbox bridges, outside the sandbox', function () {
  this.timeout(60_000);
  const redis = parseRedisTarget(requiredEnv('REDIS_URL')).nodes[0];
  let fake: http.Server;
  let fakePort = 0;
  /** What reached the fake: every request's method and path. */
  const reached: string[] = [];
  const proxies: EgressProxy[] = [];
  const refusals: EgressRefusalReason[] = [];

  async function proxy(opts: EgressProxyOptions): Promise<EgressProxy> {
    const p = await startEgressProxy(join(tmpdir(), `egress-test-${randomBytes(6).toString('hex')}.sock`), { onRefusal: (r) => refusals.push(r), ...opts });
    proxies.push(p);
    return p;
  }

  before(async () => {
    fake = http.createServer((req, res) => {
      reached.push(`${req.method} ${req.url}`);
      res.end(`fake says hello to ${req.url} (host ${req.headers.host})`);
    });
    await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
    fakePort = (fake.address() as net.AddressInfo).port;
  });
  afterEach(() => {
    refusals.length = 0;
    reached.length = 0;
  });
  after(async () => {
    await Promise.all(proxies.map((p) => p.close()));
    await new Promise((r) => fake.close(r));
  });

  it('with the public-address rule lifted (this test only), carries fetch, HTTP_PROXY clients, Python urllib and a CONNECT tunnel to a loopback fake', async () => {
    const p = await proxy({ allowPrivate: true });
    const url = `http://127.0.0.1:${fakePort}/hi?x=1`;
    const node = await nodeClient(p.socketPath, [url], true);
    assert.deepEqual(node.map((a) => [a.target, a.status]), [[url, 200], [`env ${url}`, 200]]);
    assert.match(node[0].body!, /fake says hello to \/hi\?x=1/);
    const py = await pythonClient(p.socketPath, [`http://localhost:${fakePort}/py`], true);
    assert.deepEqual(py.map((a) => [a.target, a.status]), [[`http://localhost:${fakePort}/py`, 200], [`connect http://localhost:${fakePort}/py`, 200]], JSON.stringify(py));
    assert.match(py[0].body!, /host localhost:\d+/);
    assert.deepEqual(reached, ['GET /hi?x=1', 'GET /hi?x=1', 'GET /py', 'GET /py']);
    assert.deepEqual(refusals, []);
  });

  it('with the guard on, refuses Redis, loopback, metadata, private and CGNAT targets, by address and by names resolving to them, for Node and Python clients alike', async () => {
    const table = { 'redis.internal.test': [redis.host === 'localhost' ? '127.0.0.1' : redis.host], 'metadata.internal.test': ['169.254.169.254'], 'corp.internal.test': ['10.0.0.1'], 'rebind.internal.test': ['93.184.216.34', '127.0.0.1'] };
    const p = await proxy({ resolver: async (h) => (h === 'localhost' ? [{ address: '127.0.0.1', family: 4 }] : resolverOf(table)(h)) });
    const targets = [
      `http://127.0.0.1:${redis.port}/`,
      `http://localhost:${fakePort}/`,
      `http://127.0.0.1:${fakePort}/`,
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.1/',
      'http://100.64.0.1/',
      'http://[::1]/',
      `http://redis.internal.test:${redis.port}/`,
      'http://metadata.internal.test/latest/meta-data/',
      'http://corp.internal.test/',
      'http://rebind.internal.test/',
    ];
    const node = await nodeClient(p.socketPath, targets, true);
    const py = await pythonClient(p.socketPath, targets.slice(0, 4), true);
    const attempts: Attempt[] = [...node, ...py];
    assert.equal(attempts.length, targets.length * 2 + 8);
    for (const a of attempts) {
      assert.ok(a.status === 403 || a.error !== undefined, `${a.target} was not refused: ${JSON.stringify(a)}`);
      // The refusal names what the tool asked for, never what the name resolved to.
      for (const hidden of ['169.254.169.254', '10.0.0.1', '93.184.216.34']) if (a.body && !a.target.includes(hidden)) assert.ok(!a.body.includes(hidden), a.body);
      assert.ok(!(a.body ?? '').includes('PONG') && !(a.body ?? '').includes('redis_version'), a.target);
    }
    assert.deepEqual(reached, [], 'nothing reached the loopback fake');
    assert.equal(refusals.length, attempts.length, 'every refusal is counted once');
    assert.ok(refusals.every((r) => r === 'not_public'), refusals.join());
  });

  it("with the rule lifted, still refuses Troupe's own Redis and listener ports, by address and by name", async () => {
    const own = new OwnAddresses(ownEndpoints({ redisUrl: requiredEnv('REDIS_URL'), mongodbUrl: requiredEnv('MONGODB_URL'), ports: [fakePort + 1] }));
    const p = await proxy({ allowPrivate: true, own, resolver: async () => [{ address: '127.0.0.1', family: 4 }] });
    const node = await nodeClient(p.socketPath, [`http://127.0.0.1:${redis.port}/`, `http://redis.internal.test:${redis.port}/`, `http://localhost:${fakePort + 1}/`, `http://127.0.0.1:${fakePort}/ok`]);
    assert.deepEqual(node.map((a) => a.status ?? 'error'), ['error', 'error', 'error', 200], JSON.stringify(node));
    assert.deepEqual(refusals, ['troupe_own', 'troupe_own', 'troupe_own']);
    assert.deepEqual(reached, ['GET /ok']);
  });

  it('with an allowlist, refuses names it does not list (and bare addresses) before resolving them', async () => {
    let resolved = 0;
    const p = await proxy({ allowPrivate: true, allowedDomains: ['fake.test'], resolver: async () => (resolved++, [{ address: '127.0.0.1', family: 4 }]) });
    const node = await nodeClient(p.socketPath, [`http://fake.test:${fakePort}/listed`, `http://other.test:${fakePort}/`, `http://127.0.0.1:${fakePort}/`]);
    assert.deepEqual(node.map((a) => a.status ?? 'error'), [200, 'error', 'error']);
    assert.deepEqual(refusals, ['not_allowed', 'not_allowed']);
    assert.equal(resolved, 1);
    const env = await rawRequest(p.socketPath, `GET http://other.test:${fakePort}/ HTTP/1.1\r\nHost: other.test\r\n\r\n`);
    assert.match(env, /^HTTP\/1\.1 403 Forbidden[\s\S]*other\.test is not in this agent's sandbox\.allowed_domains/);
  });

  it('connects to the address it vetted, not to a second DNS answer (rebinding)', async () => {
    let calls = 0;
    // First answer: the (allowed) fake; any later answer would be somewhere else.
    const p = await proxy({ allowPrivate: true, resolver: async () => (calls++ === 0 ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '10.255.255.1', family: 4 }]) });
    const got = await rawRequest(p.socketPath, `CONNECT rebind.test:${fakePort} HTTP/1.1\r\nHost: rebind.test:${fakePort}\r\n\r\nGET /tunnel HTTP/1.1\r\nHost: rebind.test\r\nConnection: close\r\n\r\n`);
    assert.match(got, /^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 OK[\s\S]*fake says hello to \/tunnel/);
    assert.equal(calls, 1);
  });

  it('bounds what one call may hold: request head size, connections at once, idle tunnels; close() ends every tunnel and removes the socket', async () => {
    const p = await proxy({ allowPrivate: true, maxConnections: 2, idleTimeoutMs: 300, maxHeaderBytes: 1024 });
    const big = await rawRequest(p.socketPath, `GET http://127.0.0.1:${fakePort}/ HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(4096)}\r\n\r\n`);
    assert.match(big, /^HTTP\/1\.1 431 /);
    // Two tunnels held open, then a third is refused.
    const held = [0, 1].map(() => net.connect(p.socketPath));
    const established = held.map((s) => new Promise<string>((r) => s.once('data', (c: Buffer) => r(c.toString()))));
    for (const s of held) s.write(`CONNECT 127.0.0.1:${fakePort} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    for (const e of established) assert.match(await e, /^HTTP\/1\.1 200 /);
    const third = await rawRequest(p.socketPath, `CONNECT 127.0.0.1:${fakePort} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    assert.match(third, /^HTTP\/1\.1 503 [\s\S]*already has 2 connections open/);
    assert.deepEqual(refusals, ['too_many_connections']);
    // Idle tunnels are closed by the proxy within its idle timeout (300 ms here).
    const started = Date.now();
    await Promise.all(held.map((s) => new Promise((r) => s.once('close', r))));
    assert.ok(Date.now() - started < 3000);
    const fourth = await rawRequest(p.socketPath, `CONNECT 127.0.0.1:${fakePort} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    assert.match(fourth, /fake says hello to \/after/, 'the slots came back');
    // A tunnel open at close() is ended, and the socket file goes.
    const open = net.connect(p.socketPath);
    await new Promise<void>((r) => open.once('connect', () => r()));
    open.write(`CONNECT 127.0.0.1:${fakePort} HTTP/1.1\r\nHost: x\r\n\r\n`);
    await new Promise((r) => open.once('data', r));
    const ended = new Promise((r) => open.once('close', r));
    await p.close();
    await ended;
    assert.equal(existsSync(p.socketPath), false);
    await p.close(); // idempotent
  });

  it('answers 502 when a vetted destination does not accept, by tunnel and by forwarded request, and keeps serving after clients vanish mid-tunnel', async () => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const deadPort = (closed.address() as net.AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const p = await proxy({ allowPrivate: true, resolver: async () => [{ address: '127.0.0.1', family: 4 }] });
    assert.match(await rawRequest(p.socketPath, `CONNECT dead.test:${deadPort} HTTP/1.1\r\nHost: x\r\n\r\n`), /^HTTP\/1\.1 502 [\s\S]*could not connect to dead\.test:\d+/);
    assert.match(await rawRequest(p.socketPath, `GET http://dead.test:${deadPort}/ HTTP/1.1\r\nHost: x\r\n\r\n`), /^HTTP\/1\.1 502 [\s\S]*could not reach dead\.test:\d+/);
    for (let i = 0; i < 5; i++) {
      const s = net.connect(p.socketPath);
      s.write(`CONNECT 127.0.0.1:${fakePort} HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n`);
      await new Promise((r) => setTimeout(r, 20));
      s.destroy();
    }
    assert.match(await rawRequest(p.socketPath, `GET http://ok.test:${fakePort}/still HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`), /fake says hello to \/still/);
    assert.deepEqual(refusals, []);
  });

  it('refuses what it does not carry: origin-form requests, https:// in absolute form, CONNECT without a port, WebSocket upgrades', async () => {
    const p = await proxy({ allowPrivate: true });
    assert.match(await rawRequest(p.socketPath, 'GET /local HTTP/1.1\r\nHost: x\r\n\r\n'), /^HTTP\/1\.1 400 /);
    assert.match(await rawRequest(p.socketPath, `GET https://127.0.0.1:${fakePort}/ HTTP/1.1\r\nHost: x\r\n\r\n`), /^HTTP\/1\.1 400 [\s\S]*use CONNECT for https/);
    assert.match(await rawRequest(p.socketPath, 'CONNECT example.com HTTP/1.1\r\nHost: x\r\n\r\n'), /^HTTP\/1\.1 400 /);
    assert.match(await rawRequest(p.socketPath, `GET http://127.0.0.1:${fakePort}/ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`), /^HTTP\/1\.1 400 /);
    assert.deepEqual(reached, []);
    assert.deepEqual(refusals, ['bad_target', 'bad_target', 'bad_target', 'bad_target']);
  });
});
