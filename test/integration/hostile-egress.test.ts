/**
 * The network cases of the hostile-tenant suite: a tool reaching for Troupe's
 * Redis, MongoDB and listeners, loopback, the cloud metadata address and a
 * private address, by address and by names resolving to them, with internet
 * access off (no network at all) and on (only the egress proxy, with the
 * guard on). Each attempt is refused and each proxy refusal counted. The
 * public-address rule is lifted in one test only, to show the success path to
 * a loopback fake: there is no internet here to reach a public address.
 */
import assert from 'node:assert/strict';
import { realpathSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { parseRedisTarget } from '../../src/lib/redis/target.js';
import { runToolJob } from '../../actors/tool-runner/run-tool-job.js';
import { newId } from '../../src/domain/ids.js';
import { toolRunnerPorts } from '../../src/roles/actor-ports.js';
import { buildSession } from '../../src/app/sessions/create-session.js';
import { AgentStore } from '../../src/store/agents.js';
import type { Manifest } from '../../src/domain/agent.js';
import { BlobStore } from '../../src/store/blobs.js';
import { tarGz } from '../support/archives.js';
import { requiredEnv, startHarness, type Harness } from '../support/harness.js';
import { waitingToolJob } from '../support/tool-jobs.js';
import { OwnAddresses, type EgressRefusalReason } from '../../src/lib/net/egress-guard.js';
import type { Resolver } from '../../src/lib/net/resolver.js';
import { hostSandbox } from '../../src/lib/sandbox/capabilities.js';
import { runInSandbox, SANDBOX_FILES } from '../../src/lib/sandbox/run.js';
import { binaryAndLibraries } from '../../src/lib/sandbox/runtimes.js';
import { ownEndpoints, type EgressSettings } from '../../src/lib/sandbox/egress.js';
import { outputOf, runHostile } from '../support/hostile-tools.js';

/** What the hostile tool saw for each way it tried. */
interface Seen {
  fetch: Record<string, string>;
  env: Record<string, string>;
  raw: Record<string, string>;
  socket: string;
  proxyVars: string | null;
}

/**
 * The hostile tool: global fetch, a plain node:http GET through HTTP_PROXY (as
 * env-proxy clients do), raw TCP with a Redis PING, and a CONNECT written
 * straight to the egress socket. `reached` is what would mean an escape.
 */
const TOOL = `
const net = require('net'), http = require('http');
const code = (e) => String((e && e.cause && (e.cause.code || e.cause.message)) || (e && (e.code || e.message)));
function rawPing(host, port) {
  return new Promise((done) => {
    const s = net.connect({ host, port });
    const t = setTimeout(() => { s.destroy(); done('timeout'); }, 3000);
    s.on('connect', () => s.write('PING\\r\\n'));
    s.on('data', (d) => { clearTimeout(t); s.destroy(); done('reached: ' + d.toString().slice(0, 40)); });
    s.on('error', (e) => { clearTimeout(t); done(code(e)); });
  });
}
function viaEnv(url) {
  if (!process.env.HTTP_PROXY) return Promise.resolve('no proxy');
  const p = new URL(process.env.HTTP_PROXY);
  return new Promise((done) => {
    const req = http.get({ host: p.hostname, port: p.port, path: url, timeout: 3000 }, (res) => {
      let b = ''; res.on('data', (c) => b += c); res.on('end', () => done(res.statusCode === 200 ? 'reached: ' + b.slice(0, 60) : String(res.statusCode) + ' ' + b.trim()));
    });
    req.on('error', (e) => done(code(e)));
  });
}
function connectOnSocket(target) {
  return new Promise((done) => {
    const s = net.connect('/run/troupe/egress.sock');
    s.on('connect', () => s.write('CONNECT ' + target + ' HTTP/1.1\\r\\nHost: ' + target + '\\r\\n\\r\\nPING\\r\\n'));
    s.on('data', (d) => { s.destroy(); done(d.toString().split('\\r\\n')[0]); });
    s.on('error', (e) => done(code(e)));
  });
}
exports.handler = async ({ urls, raw, socketTarget }) => {
  const seen = { fetch: {}, env: {}, raw: {}, socket: '', proxyVars: process.env.HTTP_PROXY ? 'set' : null };
  for (const u of urls) {
    try { const r = await fetch(u, { signal: AbortSignal.timeout(3000) }); seen.fetch[u] = r.status === 200 ? 'reached: ' + (await r.text()).slice(0, 60) : String(r.status); }
    catch (e) { seen.fetch[u] = code(e); }
    seen.env[u] = await viaEnv(u);
  }
  for (const [h, p] of raw) seen.raw[h + ':' + p] = await rawPing(h, p);
  seen.socket = await connectOnSocket(socketTarget);
  return seen;
};`;

/**
 * The same attempts from a Python process (the stdlib only): the bridge from
 * /run/troupe started as the Python runner starts it, then urllib (which reads
 * the *_PROXY variables), an http.client CONNECT tunnel, and raw sockets. It
 * writes its findings to fd 3, as a runner writes a result.
 */
const PY_PROBE = `
import json, os, socket, sys, http.client, urllib.request, urllib.error
sys.path.insert(0, "/run/troupe")
args = json.loads(sys.stdin.read())["args"]
seen = {"fetch": {}, "env": {}, "raw": {}, "socket": "", "proxyVars": None}
port = None
if os.environ.get("TROUPE_EGRESS_SOCKET"):
    import egress_bridge
    port = egress_bridge.start()
    seen["proxyVars"] = "set" if os.environ.get("HTTP_PROXY") else None
def err(e):
    return type(e).__name__ + ": " + str(getattr(e, "reason", e))
for url in args["urls"]:
    try:
        with urllib.request.urlopen(url, timeout=3) as r:
            seen["env"][url] = "reached: " + r.read().decode()[:60]
    except urllib.error.HTTPError as e:
        seen["env"][url] = str(e.code) + " " + e.read().decode().strip()
    except Exception as e:
        seen["env"][url] = err(e)
    if port:
        u = urllib.parse.urlsplit(url)
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=3)
            c.set_tunnel(u.hostname, u.port or 80)
            c.request("GET", "/")
            seen["fetch"][url] = "reached: " + c.getresponse().read().decode()[:60]
        except Exception as e:
            seen["fetch"][url] = err(e)
for host, p in args["raw"]:
    try:
        s = socket.create_connection((host, p), timeout=3)
        s.sendall(b"PING\\r\\n")
        seen["raw"]["%s:%d" % (host, p)] = "reached: " + s.recv(64).decode(errors="replace")
    except Exception as e:
        seen["raw"]["%s:%d" % (host, p)] = err(e)
try:
    s = socket.socket(socket.AF_UNIX)
    s.connect("/run/troupe/egress.sock")
    s.sendall(("CONNECT %s HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n" % args["socketTarget"]).encode())
    seen["socket"] = s.recv(200).decode().split("\\r\\n")[0]
except Exception as e:
    seen["socket"] = err(e)
os.write(3, json.dumps({"ok": True, "output": seen}).encode())
`;

function resolverOf(table: Record<string, string>): Resolver {
  return async (host) => {
    if (host === 'localhost') return [{ address: '127.0.0.1', family: 4 }];
    const address = table[host];
    if (!address) throw Object.assign(new Error(`ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return [{ address, family: address.includes(':') ? 6 : 4 }];
  };
}

const escaped = (s: string) => s.startsWith('reached') || s.includes('PONG') || s.includes('redis_version') || s === '200 Connection Established' || s.startsWith('HTTP/1.1 200');

describe('hostile tenant: network', function () {
  this.timeout(60_000);
  const redis = parseRedisTarget(requiredEnv('REDIS_URL')).nodes[0];
  const mongo = new URL(requiredEnv('MONGODB_URL').replace(/^mongodb(\+srv)?:/, 'http:'));
  const mongoPort = Number(mongo.port || 27017);
  let base: string;
  let fake: http.Server;
  let fakePort = 0;
  const reachedFake: string[] = [];
  const refusals: EgressRefusalReason[] = [];
  /** Names a hostile DNS answer points at internal addresses. */
  const names = { 'redis.attacker.test': '127.0.0.1', 'metadata.attacker.test': '169.254.169.254', 'corp.attacker.test': '10.0.0.1', 'v6.attacker.test': '::1' };

  function egress(over: Partial<EgressSettings> = {}): EgressSettings {
    return { dir: join(base, 'egress'), allowPrivate: false, own: new OwnAddresses([]), resolver: resolverOf(names), onRefusal: (r) => refusals.push(r), ...over };
  }

  const urls = () => [
    `http://127.0.0.1:${redis.port}/`,
    `http://127.0.0.1:${mongoPort}/`,
    `http://localhost:${fakePort}/`,
    'http://169.254.169.254/latest/meta-data/',
    'http://10.0.0.1/',
    `http://[::1]:${fakePort}/`,
    `http://redis.attacker.test:${redis.port}/`,
    'http://metadata.attacker.test/latest/meta-data/',
    'http://corp.attacker.test/',
    `http://v6.attacker.test:${fakePort}/`,
  ];
  const raw = () => [
    ['127.0.0.1', redis.port],
    ['127.0.0.1', mongoPort],
    ['127.0.0.1', fakePort],
    ['169.254.169.254', 80],
    ['10.0.0.1', 80],
    ['localhost', redis.port],
  ];

  before(async function () {
    assert.equal(hostSandbox().level, 'bwrap-seccomp', `the suite needs bwrap: ${hostSandbox().bwrapError}`);
    base = await mkdtemp(join(tmpdir(), 'troupe-hostile-egress-'));
    await chmod(base, 0o755);
    fake = http.createServer((req, res) => {
      reachedFake.push(`${req.method} ${req.url}`);
      res.end('fake');
    });
    await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
    fakePort = (fake.address() as AddressInfo).port;
  });
  afterEach(() => {
    refusals.length = 0;
    reachedFake.length = 0;
  });
  after(async () => {
    await new Promise((r) => fake.close(r));
    await rm(base, { recursive: true, force: true });
  });

  async function attack(internetAccess: boolean, settings: EgressSettings, permissionModel = false, extra: Partial<{ allowedDomains: string[] }> = {}): Promise<Seen> {
    const args = { urls: urls(), raw: raw(), socketTarget: `127.0.0.1:${redis.port}` };
    return outputOf<Seen>(await runHostile(base, TOOL, args, { permissionModel, egress: settings, req: { internetAccess, timeoutMs: 30_000, ...extra } }));
  }

  for (const permissionModel of [false, true]) {
    it(`with internet access on (${permissionModel ? 'the shipped runtime' : 'the OS sandbox alone'}), reaches none of Redis, MongoDB, loopback, metadata, a private address or names resolving to them; the proxy refuses and counts each`, async () => {
      const seen = await attack(true, egress(), permissionModel);
      assert.equal(seen.proxyVars, 'set', 'the bridge is in place');
      for (const [what, result] of [...Object.entries(seen.fetch), ...Object.entries(seen.env), ...Object.entries(seen.raw), ['socket', seen.socket]]) {
        assert.ok(!escaped(result), `${what}: ${result}`);
      }
      // Through the proxy: a 403 naming what was asked, never what it resolved to.
      for (const [u, r] of Object.entries(seen.env)) {
        assert.match(r, /^403 egress refused: .* is not a public address$/, u);
        assert.ok(!/169\.254\.169\.254|10\.0\.0\.1/.test(r) || /169\.254|10\.0\.0\.1/.test(u), r);
      }
      assert.match(seen.socket, /^HTTP\/1\.1 403 /);
      // Raw sockets have no route: the namespace holds only its own loopback, where nothing listens.
      for (const [what, r] of Object.entries(seen.raw)) assert.match(r, /ECONNREFUSED|ENETUNREACH|EHOSTUNREACH|EAI_AGAIN|ENOTFOUND|timeout/, what);
      assert.deepEqual(reachedFake, []);
      assert.equal(refusals.length, urls().length * 2 + 1, `one refusal per attempt: ${refusals.join()}`);
      assert.ok(refusals.every((r) => r === 'not_public'), refusals.join());
    });
  }

  it('a Python tool (stdlib clients, the bridge the Python runner starts) is refused the same way, with internet access on and off', async () => {
    // Debian's interpreter (the one a per-call uid can read), by its real path: the sandbox binds that.
    const python = realpathSync('/usr/bin/python3');
    const probe = join(base, 'probe.py');
    await writeFile(probe, PY_PROBE, { mode: 0o644 });
    const runtime = { argv: [python, '-I', '-S', '-B', '/run/troupe/probe.py'], readOnlyPaths: [...binaryAndLibraries(python), `/usr/lib/${python.split('/').pop()}`], files: { '/run/troupe/probe.py': probe }, env: {} };
    const args = { urls: urls(), raw: raw(), socketTarget: `127.0.0.1:${redis.port}` };
    const version = await mkdtemp(join(base, 'py-'));
    await chmod(version, 0o755);
    const run = (internetAccess: boolean) =>
      runInSandbox({ rootDir: version, handlerPath: join(version, 'x.py'), args, env: {}, timeoutMs: 30_000, memoryMb: 128, internetAccess, scratchDir: version }, SANDBOX_FILES, { runtime, egress: egress() });
    const on = outputOf<Seen>(await run(true));
    assert.equal(on.proxyVars, 'set');
    for (const [what, result] of [...Object.entries(on.fetch), ...Object.entries(on.env), ...Object.entries(on.raw), ['socket', on.socket]]) assert.ok(!escaped(result), `${what}: ${result}`);
    for (const [u, r] of Object.entries(on.env)) assert.match(r, /^403 egress refused: .* is not a public address$/, `${u}: ${r}`);
    for (const [u, r] of Object.entries(on.fetch)) assert.match(r, /Tunnel connection failed: 403/, `${u}: ${r}`);
    assert.match(on.socket, /^HTTP\/1\.1 403 /);
    assert.equal(refusals.length, urls().length * 2 + 1, refusals.join());
    assert.ok(refusals.every((r) => r === 'not_public'));
    refusals.length = 0;
    const off = outputOf<Seen>(await run(false));
    assert.equal(off.proxyVars, null);
    for (const [what, result] of [...Object.entries(off.env), ...Object.entries(off.raw), ['socket', off.socket]]) assert.ok(!escaped(result), `${what}: ${result}`);
    assert.match(off.socket, /FileNotFoundError/);
    assert.deepEqual(refusals, []);
    assert.deepEqual(reachedFake, []);
  });

  it("the shipped Python runner with internet access: urllib goes through the proxy it bridges to, reaching a loopback fake only with the public-address rule lifted, and never Troupe's Redis", async () => {
    const version = await mkdtemp(join(base, 'pytool-'));
    await chmod(version, 0o755);
    await writeFile(join(version, 'tool.py'), PY_TOOL, { mode: 0o644 });
    const own = new OwnAddresses(ownEndpoints({ redisUrl: requiredEnv('REDIS_URL'), mongodbUrl: requiredEnv('MONGODB_URL'), ports: [] }));
    const urls = [`http://127.0.0.1:${fakePort}/py`, `http://127.0.0.1:${redis.port}/`, 'http://169.254.169.254/latest/meta-data/'];
    const run = (allowPrivate: boolean) =>
      runInSandbox({ rootDir: version, handlerPath: join(version, 'tool.py'), args: { urls }, env: {}, timeoutMs: 30_000, memoryMb: 128, internetAccess: true, scratchDir: version }, SANDBOX_FILES, { egress: egress({ allowPrivate, own }) });
    const guarded = outputOf<Record<string, string>>(await run(false));
    for (const u of urls) assert.match(guarded[u], /^403 egress refused: .* is not a public address$/, `${u}: ${guarded[u]}`);
    assert.deepEqual(reachedFake, []);
    const lifted = outputOf<Record<string, string>>(await run(true));
    assert.equal(lifted[urls[0]], 'reached: fake');
    assert.match(lifted[urls[1]], /^403 egress refused: .* is one of Troupe's own services$/);
    assert.deepEqual(reachedFake, ['GET /py']);
  });

  it('with internet access off, has no network at all: no proxy, no route, nothing counted', async () => {
    const seen = await attack(false, egress());
    assert.equal(seen.proxyVars, null);
    for (const [what, result] of [...Object.entries(seen.fetch), ...Object.entries(seen.raw)]) {
      assert.ok(!escaped(result), `${what}: ${result}`);
      assert.match(result, /ECONNREFUSED|ENETUNREACH|EHOSTUNREACH|EAI_AGAIN|ENOTFOUND|timeout/, what);
    }
    assert.ok(Object.values(seen.env).every((r) => r === 'no proxy'));
    assert.equal(seen.socket, 'ENOENT');
    assert.deepEqual(reachedFake, []);
    assert.deepEqual(refusals, []);
  });

  it("with the public-address rule lifted (this test only: no internet here), a tool reaches a loopback fake through the proxy, and still not Troupe's own Redis, MongoDB or listener ports", async () => {
    const own = new OwnAddresses(ownEndpoints({ redisUrl: requiredEnv('REDIS_URL'), mongodbUrl: requiredEnv('MONGODB_URL'), ports: [fakePort + 1] }));
    const args = {
      urls: [`http://127.0.0.1:${fakePort}/ok`, `http://127.0.0.1:${redis.port}/`, `http://localhost:${mongoPort}/`, `http://redis.attacker.test:${redis.port}/`, `http://127.0.0.1:${fakePort + 1}/`],
      raw: [['127.0.0.1', redis.port]],
      socketTarget: `127.0.0.1:${redis.port}`,
    };
    const seen = outputOf<Seen>(await runHostile(base, TOOL, args, { permissionModel: true, egress: egress({ allowPrivate: true, own }), req: { internetAccess: true, timeoutMs: 30_000 } }));
    assert.equal(seen.fetch[`http://127.0.0.1:${fakePort}/ok`], 'reached: fake');
    assert.equal(seen.env[`http://127.0.0.1:${fakePort}/ok`], 'reached: fake');
    assert.deepEqual(reachedFake, ['GET /ok', 'GET /ok']);
    for (const u of args.urls.slice(1)) assert.match(seen.env[u], /^403 egress refused: .* is one of Troupe's own services$/, u);
    assert.ok(!escaped(seen.raw[`127.0.0.1:${redis.port}`]));
    assert.match(seen.socket, /^HTTP\/1\.1 403 /);
    assert.deepEqual(refusals, Array(9).fill('troupe_own'));
  });

  it('with sandbox.allowed_domains, a name it does not list is refused before it is resolved', async () => {
    const args = { urls: ['http://other.test/', `http://api.allowed.test:${fakePort}/`, `http://127.0.0.1:${fakePort}/`], raw: [], socketTarget: 'other.test:443' };
    const seen = outputOf<Seen>(await runHostile(base, TOOL, args, { egress: egress({ allowPrivate: true, resolver: resolverOf({ 'api.allowed.test': '127.0.0.1' }) }), req: { internetAccess: true, allowedDomains: ['*.allowed.test'], timeoutMs: 30_000 } }));
    assert.match(seen.env['http://other.test/'], /^403 egress refused: other\.test is not in this agent's sandbox\.allowed_domains$/);
    assert.match(seen.env[`http://127.0.0.1:${fakePort}/`], /^403 .*not in this agent's sandbox\.allowed_domains$/);
    assert.match(seen.socket, /^HTTP\/1\.1 403 /);
    // The listed name passes the allowlist (here it resolves to the loopback fake, reachable only because the rule is lifted).
    assert.equal(seen.env[`http://api.allowed.test:${fakePort}/`], 'reached: fake');
    assert.deepEqual(refusals, Array(5).fill('not_allowed'));
  });
});

describe('hostile tenant: network, through the tool-runner of a running worker', function () {
  this.timeout(60_000);
  let h: Harness;
  let sandboxDir: string;

  before(async () => {
    sandboxDir = await mkdtemp(join(tmpdir(), 'troupe-hostile-egress-worker-'));
    // The worker's own configuration: the guard on (TROUPE_EGRESS_ALLOW_PRIVATE unset), its listeners' ports known.
    h = await startHarness({ roles: ['worker'], env: { TROUPE_SANDBOX_DIR: sandboxDir } });
  });
  after(async () => {
    await h?.close();
    await rm(sandboxDir, { recursive: true, force: true });
  });

  it("a session with internet access and an agent's allowlist: Redis, the web port and an unlisted name are refused, and troupe_egress_refusals_total counts them by reason", async () => {
    const core = h.running.core;
    const org = (await core.stores.orgs.byName('default'))!;
    const redisPort = parseRedisTarget(requiredEnv('REDIS_URL')).nodes[0].port;
    const manifest: Manifest = {
      name: 'egress',
      sdk: 'troupe-js@1',
      entrypoint: 'agent.js:agent',
      sandbox: { secrets: [], internet_access: true, allowed_domains: ['localhost', '*.example.com'] },
      custom_tools: [{ name: 'probe', path: 'probe.js', kind: 'custom', timeout_seconds: 20 }],
      llm_options: [{ id: 'main', provider: 'scripted', script: 'script.json' }],
    };
    const archive = await tarGz([
      { name: 'troupe.json', content: JSON.stringify(manifest) },
      { name: 'agent.js', content: 'exports.agent = {};' },
      { name: 'probe.js', content: TOOL },
    ]);
    const snapshotId = newId('snapshot');
    await pipeline(Readable.from([archive]), new BlobStore(core.db).upload('snapshots', snapshotId, 'source.tar.gz', { org_id: org._id }));
    const tools = [{ name: 'probe', kind: 'custom' as const, path: 'probe.js', timeout_seconds: 20, description: null, input_schema: null, output_schema: null }];
    const { version } = await new AgentStore(core.db).create(
      { id: newId('agent'), orgId: org._id, name: 'egress' },
      { id: newId('version'), snapshotId, content: { manifest, llm_options: manifest.llm_options, tools, scripts: {}, entrypoint: manifest.entrypoint } },
    );
    const session = buildSession(core.box, org._id, version, { internet_access: true }, { priority: 'interactive' });
    await core.stores.sessions.insert(session);
    const before = await refusalCounts(h);
    const webPort = Number(h.env.PORT);
    const args = { urls: [`http://localhost:${redisPort}/`, `http://localhost:${webPort}/v1/agents`, 'http://other.test/'], raw: [['127.0.0.1', redisPort]], socketTarget: `localhost:${redisPort}` };
    const job = await waitingToolJob(core, { org_id: org._id, session_id: session._id, message_id: newId('message'), attempt: 1, tool_call_id: 'call_probe', tool_name: 'probe', arguments: args });
    const r = await runToolJob(toolRunnerPorts(core), job);
    assert.equal(r?.ok, true, JSON.stringify(r));
    const seen = (r as { output: Seen }).output;
    for (const [what, result] of [...Object.entries(seen.fetch), ...Object.entries(seen.env), ...Object.entries(seen.raw), ['socket', seen.socket]]) assert.ok(!escaped(result), `${what}: ${result}`);
    assert.match(seen.env['http://other.test/'], /not in this agent's sandbox\.allowed_domains/);
    assert.match(seen.env[`http://localhost:${redisPort}/`], /localhost is not a public address/);
    const after = await refusalCounts(h);
    assert.equal((after.not_public ?? 0) - (before.not_public ?? 0), 5, JSON.stringify(after));
    assert.equal((after.not_allowed ?? 0) - (before.not_allowed ?? 0), 2, JSON.stringify(after));
    assert.deepEqual(await readdirSafe(join(sandboxDir, 'egress')), [], 'the call\'s proxy socket is gone');
  });
});

async function refusalCounts(h: Harness): Promise<Record<string, number>> {
  const metric = await h.running.core.metrics.egressRefusals.get();
  return Object.fromEntries(metric.values.map((v) => [String(v.labels.reason), v.value]));
}

async function readdirSafe(dir: string): Promise<string[]> {
  return (await import('node:fs/promises')).readdir(dir).catch(() => []);
}

/** A Python tool as a tenant ships it: urllib, which follows the *_PROXY variables the runner's bridge sets. */
const PY_TOOL = `
import urllib.request, urllib.error
def handler(args, context):
    seen = {}
    for url in args["urls"]:
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                seen[url] = "reached: " + r.read(40).decode()
        except urllib.error.HTTPError as e:
            seen[url] = "%d %s" % (e.code, e.read(200).decode().strip())
        except Exception as e:
            seen[url] = type(e).__name__ + ": " + str(e)
    return seen
`;
