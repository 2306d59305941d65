import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { outcomes, outputOf, publishPythonAgent, startCase, type ToolOutcome } from '../support/python-agent.js';
import { createAgentFrom } from '../support/archives.js';
import { startHarness, type Harness } from '../support/harness.js';

/**
 * A hostile tenant's Python tools (issue #29 item 7): each tries one escape
 * and must be refused, while the service keeps serving and another org's
 * Python call, running at the same time, completes. Every loop a tool runs is
 * bounded, so a weaker sandbox fails these tests instead of the machine.
 */
const FORK_BOUND = 400;
const FILL_BOUND_FILES = 96; // 8 MiB each: 768 MiB, past any scratch quota the sandbox sets

const HOSTILE = {
  peek: {
    source: `
import os

def attempt(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("latin-1")
    except OSError as e:
        return type(e).__name__

def handler(args, context):
    needles = [args["canary"].encode(), args["troupe_secret"].encode()]
    readable, found = [], []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                data = f.read()
        except OSError:
            continue
        readable.append(int(pid))
        found += [int(pid) for n in needles if n in data]
    return {"found": found, "pid1": attempt("/proc/1/environ"), "parent": attempt("/proc/%d/environ" % os.getppid()), "shadow": attempt("/etc/shadow")}
`,
  },
  kill_all: {
    source: `
import os, signal

def handler(args, context):
    out = {}
    for name, pid, sig in (("all", -1, signal.SIGKILL), ("parent", os.getppid(), signal.SIGTERM)):
        try:
            os.kill(pid, sig)
            out[name] = "sent"
        except OSError as e:
            out[name] = type(e).__name__
    return out
`,
  },
  fork_bomb: {
    timeout_seconds: 15,
    source: `
import os, time

def handler(args, context):
    forks, error = 0, None
    for _ in range(args["bound"]):
        try:
            pid = os.fork()
        except OSError as e:
            error = type(e).__name__
            break
        if pid == 0:
            time.sleep(3)
            os._exit(0)
        forks += 1
    return {"forks": forks, "error": error}
`,
  },
  fill_scratch: {
    timeout_seconds: 30,
    source: `
import os

def handler(args, context):
    chunk = b"\\0" * (8 * 1024 * 1024)
    written, error = 0, None
    for i in range(args["bound"]):
        try:
            with open(os.path.join(context.scratch_dir, "fill-%d" % i), "wb") as f:
                f.write(chunk)
            written += len(chunk)
        except OSError as e:
            error = type(e).__name__
            break
    return {"written_mib": written // (1024 * 1024), "error": error}
`,
  },
  write_outside: {
    source: `
import os

def handler(args, context):
    out = {}
    for path in args["paths"] + [os.path.join(os.path.dirname(__file__), "escaped.txt")]:
        try:
            with open(path, "w") as f:
                f.write("escaped")
            out[path] = "written"
        except OSError as e:
            out[path] = type(e).__name__
    return out
`,
  },
  redis: {
    source: `
import socket

def handler(args, context):
    out = {}
    for host in ("127.0.0.1", "localhost"):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(2)
        try:
            s.connect((host, args["port"]))
            s.sendall(b"PING\\r\\n")
            out[host] = "connected: " + s.recv(64).decode("latin-1")
        except OSError as e:
            out[host] = type(e).__name__
        finally:
            s.close()
    # Through the *_PROXY variables (the egress bridge, with internet access): refused by the proxy, or no network.
    import urllib.error, urllib.request
    try:
        urllib.request.urlopen("http://127.0.0.1:%d/" % args["port"], timeout=3)
        out["http"] = "reached"
    except urllib.error.HTTPError as e:
        out["http"] = "HTTPError %d" % e.code
    except Exception as e:
        out["http"] = type(e).__name__
    return out
`,
  },
};

const VICTIM = {
  wait_and_answer: {
    source: `
import asyncio

async def handler(args, context):
    await asyncio.sleep(args["seconds"])
    return {"alive": True, "canary_length": len(context.secrets.get("CANARY", ""))}
`,
  },
};

describe('hostile Python tools', function () {
  this.timeout(60_000);
  let h: Harness;
  let sandboxDir: string;
  let hostileId: string;
  let victimId: string;
  let victimApi: Harness;
  const canary = `canary-${randomBytes(12).toString('hex')}`;
  const nonce = randomBytes(6).toString('hex');
  const outside = [join(tmpdir(), `troupe-py-escape-${nonce}`), `/var/tmp/troupe-py-escape-${nonce}`, `/dev/shm/troupe-py-escape-${nonce}`];

  before(async () => {
    sandboxDir = await mkdtemp(join(tmpdir(), 'troupe-py-hostile-'));
    h = await startHarness({ roles: ['web', 'worker'], env: { TROUPE_SANDBOX_DIR: sandboxDir } });
    const redisPort = Number(new URL(h.env.REDIS_URL).port);
    hostileId = await publishPythonAgent(h, HOSTILE, {
      peek: { peek: { canary, troupe_secret: h.env.MONGODB_URL } },
      kill: { kill_all: {} },
      fork: { fork_bomb: { bound: FORK_BOUND } },
      disk: { fill_scratch: { bound: FILL_BOUND_FILES } },
      escape: { write_outside: { paths: [...outside, join(sandboxDir, `escaped-${nonce}`), join(sandboxDir, 'scratch', `escaped-${nonce}`)] } },
      redis: { redis: { port: redisPort } },
    });
    // Another org, with its own key, runs the victim's calls.
    const other = await h.running.core.stores.orgs.create(`py-victim-${nonce}`);
    const { key } = await h.running.core.stores.apiKeys.create(other._id, 'api');
    victimApi = { ...h, api: (path, init = {}) => h.api(path, { ...init, headers: { ...(init.headers as Record<string, string> | undefined), Authorization: `Bearer ${key}` } }) };
    victimId = await publishPythonAgent(victimApi, VICTIM, { wait: { wait_and_answer: { seconds: 4 } }, quick: { wait_and_answer: { seconds: 0 } } }, { secrets: ['CANARY'], name: 'victim' });
  });
  after(async () => {
    await h?.close();
    await rm(sandboxDir, { recursive: true, force: true });
    for (const p of outside) await rm(p, { force: true });
  });

  /** Runs a hostile case while the other org's call is running; both outcomes. */
  async function alongsideVictim(llmId: string): Promise<{ attack: Record<string, ToolOutcome>; victim: Record<string, ToolOutcome> }> {
    const victimSid = await startCase(victimApi, victimId, 'wait', { secrets: { CANARY: canary } });
    await waitRunning();
    const attack = await outcomes(h, await startCase(h, hostileId, llmId));
    assert.ok(await victimAlive(), 'the other call, started before the attack, is still running after it (it was killed, or it ended too soon for this test to prove anything)');
    return { attack, victim: await outcomes(victimApi, victimSid) };
  }

  /** Whether the victim's tool process is up: the test runs as Troupe's user and finds it by the secret in its environment. */
  async function victimAlive(): Promise<boolean> {
    for (const pid of await readdir('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      const env = await readFile(`/proc/${pid}/environ`).catch(() => null);
      if (env?.includes(canary)) return true;
    }
    return false;
  }

  async function waitRunning(): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (!(await victimAlive())) {
      if (Date.now() > deadline) assert.fail("the victim's tool process never started");
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async function stillServing(): Promise<void> {
    const health = await h.api('/healthz');
    assert.equal(health.status, 200, await health.text());
  }

  it("cannot read another call's secrets, Troupe's environment, init's or its parent's environment, or /etc/shadow", async () => {
    const { attack, victim } = await alongsideVictim('peek');
    const seen = outputOf<{ found: number[]; pid1: string; parent: string; shadow: string }>(attack, 'peek');
    assert.deepEqual(seen.found, [], 'no readable environ holds the other call\u2019s secret or Troupe\u2019s database URL');
    // Refused, or (in a PID namespace) the sandbox's own init, whose environment is this call's own.
    for (const environ of [seen.pid1, seen.parent]) {
      const names = environ.includes('=') ? environ.split('\0').filter(Boolean).map((kv) => kv.split('=')[0]) : [];
      assert.ok(/^(PermissionError|FileNotFoundError|ProcessLookupError)$/.test(environ) || names.every((n) => n === 'TMPDIR' || n === 'PWD'), JSON.stringify(environ));
    }
    assert.match(seen.shadow, /^(PermissionError|FileNotFoundError)$/);
    assert.deepEqual(outputOf(victim, 'wait_and_answer'), { alive: true, canary_length: canary.length });
    await stillServing();
  });

  it("cannot end another org's running call or Troupe with kill(-1) or a signal to its parent", async () => {
    const { attack, victim } = await alongsideVictim('kill');
    assert.ok(attack.kill_all, 'the attack ran');
    assert.deepEqual(outputOf(victim, 'wait_and_answer'), { alive: true, canary_length: canary.length });
    await stillServing();
  });

  it('a fork bomb hits the process limit', async () => {
    const all = await outcomes(h, await startCase(h, hostileId, 'fork'), 40_000);
    const r = all.fork_bomb;
    assert.ok(r, JSON.stringify(all));
    if (r.ok) {
      const out = r.output as { forks: number; error: string | null };
      assert.ok(out.error !== null && out.forks < FORK_BOUND, `forked ${out.forks} times unrefused`);
    } else {
      assert.match(r.error, /process|killed|exited/, 'stopped by the sandbox, not by a bug');
    }
    await stillServing();
  });

  it('filling the scratch folder stops at its quota', async () => {
    const all = await outcomes(h, await startCase(h, hostileId, 'disk'), 45_000);
    const r = all.fill_scratch;
    assert.ok(r, JSON.stringify(all));
    if (r.ok) {
      const out = r.output as { written_mib: number; error: string | null };
      assert.ok(out.error !== null && out.written_mib < FILL_BOUND_FILES * 8, `wrote ${out.written_mib} MiB unrefused`);
    }
    assert.deepEqual(await readdir(join(sandboxDir, 'scratch')).catch(() => []), [], 'the scratch folder is gone after the call');
    await stillServing();
  });

  it('writes nothing outside its scratch folder', async () => {
    const all = await outcomes(h, await startCase(h, hostileId, 'escape'));
    const tried = outputOf<Record<string, string>>(all, 'write_outside');
    assert.equal(Object.keys(tried).length, outside.length + 3);
    for (const p of [...outside, join(sandboxDir, `escaped-${nonce}`), join(sandboxDir, 'scratch', `escaped-${nonce}`)]) assert.equal(existsSync(p), false, `${p} was written on the host`);
    const versions = await readdir(join(sandboxDir, 'versions'));
    for (const v of versions) assert.equal(existsSync(join(sandboxDir, 'versions', v, 'tools', 'escaped.txt')), false, 'the version folder stays read-only');
    await stillServing();
  });

  it("cannot reach Troupe's Redis with internet access off or on", async () => {
    for (const internet_access of [false, true]) {
      const all = await outcomes(h, await startCase(h, hostileId, 'redis', { internet_access }));
      const tried = outputOf<Record<string, string>>(all, 'redis');
      assert.deepEqual(Object.keys(tried).sort(), ['127.0.0.1', 'http', 'localhost']);
      for (const host of ['127.0.0.1', 'localhost']) assert.doesNotMatch(tried[host], /^connected/, `${host} (internet ${internet_access}): ${tried[host]}`);
      // Refused by the egress proxy (403), or no way out at all.
      assert.match(tried.http, /^(HTTPError 403|URLError|ConnectionRefusedError)$/, `internet ${internet_access}: ${tried.http}`);
    }
    await stillServing();
  });

  it('a hostile Python entrypoint at publish steals nothing and harms nothing', async () => {
    const steal = `import os
seen = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                seen.append(f.read().decode("latin-1"))
        except OSError:
            pass
for path in ("/etc/shadow", "/proc/%d/environ" % os.getppid()):
    try:
        with open(path, "rb") as f:
            seen.append(f.read().decode("latin-1"))
    except OSError:
        pass
agent = {"instructions": "|".join(seen)}
`;
    const harm = `import os, signal
try:
    os.kill(-1, signal.SIGKILL)
except OSError:
    pass
try:
    os.kill(os.getppid(), signal.SIGTERM)
except OSError:
    pass
raise RuntimeError("done harming")
`;
    const manifest = { name: 'evil', sdk: 'troupe-js@1', entrypoint: 'agent.py:agent', sandbox: { secrets: [], internet_access: false }, custom_tools: [], llm_options: [{ id: 's', provider: 'scripted', script: 's.json' }] };
    const script = { name: 's.json', content: JSON.stringify({ turns: [{ text: 'hi' }] }) };
    const victimSid = await startCase(victimApi, victimId, 'wait', { secrets: { CANARY: canary } });
    await waitRunning();
    const stole = await createAgentFrom(h, manifest, [{ name: 'troupe.json', content: JSON.stringify(manifest) }, { name: 'agent.py', content: steal }, script], 'evil-steal');
    const body = await stole.text();
    assert.ok(!body.includes(canary) && !body.includes(h.env.MONGODB_URL), 'nothing of another call or of Troupe in the answer');
    if (stole.status === 201) {
      const org = (await h.running.core.stores.orgs.byName('default'))!;
      const version = await h.running.core.stores.agents.activeVersion(org._id, (JSON.parse(body) as { id: string }).id);
      const text = version?.agent_config?.instructions ?? '';
      assert.ok(!text.includes(canary) && !text.includes(h.env.MONGODB_URL) && !text.includes('root:'), text.slice(0, 500));
    }
    assert.ok(await victimAlive(), 'the entrypoints ran while the other call was running');
    const harmed = await createAgentFrom(h, manifest, [{ name: 'troupe.json', content: JSON.stringify(manifest) }, { name: 'agent.py', content: harm }, script], 'evil-harm');
    const refusal = (await harmed.json()) as { error: { code: string; message: string } };
    assert.equal(harmed.status, 400, JSON.stringify(refusal));
    assert.equal(refusal.error.code, 'invalid_entrypoint');
    assert.match(refusal.error.message, /RuntimeError: done harming/);
    assert.deepEqual(outputOf(await outcomes(victimApi, victimSid), 'wait_and_answer'), { alive: true, canary_length: canary.length });
    await stillServing();
  });

  it('keeps serving ordinary calls afterwards', async () => {
    const all = await outcomes(victimApi, await startCase(victimApi, victimId, 'quick', { secrets: { CANARY: 'x' } }));
    assert.deepEqual(outputOf(all, 'wait_and_answer'), { alive: true, canary_length: 1 });
  });
});
