import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { outcomes, outputOf, publishPythonAgent, startCase, type ToolOutcome } from '../support/python-agent.js';
import { createAgentFrom } from '../support/archives.js';
import { startHarness, type Harness } from '../support/harness.js';
import { HOSTILE, VICTIM } from '../support/python-hostile-tools.js';

/**
 * A hostile tenant's Python tools and entrypoint against other calls (issue
 * #29 item 7): each tries one escape and must be refused, while the service
 * keeps serving and another org's Python call, running at the same time,
 * completes. The limits (fork, disk, writes, network) are in
 * python-hostile-limits.test.ts.
 */
describe('hostile Python tools against other calls', function () {
  this.timeout(60_000);
  let h: Harness;
  let sandboxDir: string;
  let hostileId: string;
  let victimId: string;
  let victimApi: Harness;
  const canary = `canary-${randomBytes(12).toString('hex')}`;
  const nonce = randomBytes(6).toString('hex');

  before(async () => {
    sandboxDir = await mkdtemp(join(tmpdir(), 'troupe-py-hostile-'));
    h = await startHarness({ roles: ['web', 'worker'], env: { TROUPE_SANDBOX_DIR: sandboxDir } });
    hostileId = await publishPythonAgent(h, { peek: HOSTILE.peek, kill_all: HOSTILE.kill_all }, {
      peek: { peek: { canary, troupe_secret: h.env.MONGODB_URL } },
      kill: { kill_all: {} },
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
