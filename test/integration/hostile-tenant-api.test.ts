/**
 * The hostile-tenant cases that go through Troupe itself: a tool run by the
 * tool-runner from a stored version, and entrypoints through the publish API
 * (the direct sandbox cases are in hostile-tenant.test.ts).
 */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ToolRunJob } from '../../src/domain/actors/tool-runner.js';
import { runToolJob } from '../../actors/tool-runner/run-tool-job.js';
import { newId } from '../../src/domain/ids.js';
import { toolRunnerPorts } from '../../src/roles/actor-ports.js';
import { hostSandbox } from '../../src/lib/sandbox/capabilities.js';
import { buildSession } from '../../src/app/sessions/create-session.js';
import { AgentStore } from '../../src/store/agents.js';
import type { Manifest, ToolDef } from '../../src/domain/agent.js';
import { BlobStore } from '../../src/store/blobs.js';
import { createAgentFrom, minimalAgent, tarGz } from '../support/archives.js';
import { startHarness, type Harness } from '../support/harness.js';
import { waitingToolJob } from '../support/tool-jobs.js';

describe('hostile tenant through the API', function () {
  let base: string;
  /** One web + worker process for every case. */
  let h: Harness;

  before(async function () {
    assert.equal(hostSandbox().level, 'bwrap-seccomp', `the suite needs bwrap: ${hostSandbox().bwrapError}`);
    base = await mkdtemp(join(tmpdir(), 'troupe-hostile-api-'));
    await chmod(base, 0o755);
    h = await startHarness({ roles: ['web', 'worker'], env: { TROUPE_SANDBOX_DIR: join(base, 'troupe') } });
  });
  after(async () => {
    await h?.close();
    await rm(base, { recursive: true, force: true });
  });

  describe('through the tool-runner', function () {

    /** An org with one published-as-stored version holding `tools` (name → source) and a session with a secret. */
    async function orgWithTools(name: string, tools: Record<string, string>): Promise<{ job: (tool: string) => Promise<ToolRunJob> }> {
      const core = h.running.core;
      const org = await core.stores.orgs.create(`${name}-${Date.now()}`);
      const custom = Object.keys(tools).map((t) => ({ name: t, path: `tools/${t}.js`, kind: 'custom' as const, timeout_seconds: 10 }));
      const manifest: Manifest = { name, sdk: 'troupe-js@1', entrypoint: 'agent.js:agent', sandbox: { secrets: ['ORG_SECRET'], internet_access: false }, custom_tools: custom, llm_options: [{ id: 'main', provider: 'scripted', script: 's.json' }] };
      const archive = await tarGz([
        { name: 'troupe.json', content: JSON.stringify(manifest) },
        { name: 'agent.js', content: 'exports.agent = {};' },
        ...Object.entries(tools).map(([t, src]) => ({ name: `tools/${t}.js`, content: src })),
      ]);
      const snapshotId = newId('snapshot');
      await pipeline(Readable.from([archive]), new BlobStore(core.db).upload('snapshots', snapshotId, 'source.tar.gz', { org_id: org._id }));
      const defs: ToolDef[] = custom.map((t) => ({ ...t, description: null, input_schema: null, output_schema: null }));
      const { version } = await new AgentStore(core.db).create({ id: newId('agent'), orgId: org._id, name }, { id: newId('version'), snapshotId, content: { manifest, llm_options: manifest.llm_options, tools: defs, scripts: {}, entrypoint: manifest.entrypoint } });
      const session = buildSession(core.box, org._id, version, { secrets: { ORG_SECRET: `${name}-secret` } }, { priority: 'interactive' });
      await core.stores.sessions.insert(session);
      return {
        job: (tool) => waitingToolJob(core, { org_id: org._id, session_id: session._id, message_id: newId('message'), attempt: 1, tool_call_id: `call_${newId('message').slice(-8)}`, tool_name: tool, arguments: {} }),
      };
    }

    it('a shipped JavaScript tool finds no other org\'s secret, version or process, and the other org\'s call completes', async () => {
      const victim = await orgWithTools('victim', { slow: `exports.handler = async (_a, ctx) => { await new Promise((r) => setTimeout(r, 1500)); return { mine: ctx.secrets.ORG_SECRET }; };` });
      const thief = await orgWithTools('thief', {
        steal: `const fs = require('fs');
          const attempt = (f) => { try { return f(); } catch (e) { return e.code || e.message; } };
          exports.handler = async (_a, ctx) => ({
            mine: ctx.secrets.ORG_SECRET, env: { ...process.env },
            versions: attempt(() => fs.readdirSync(${JSON.stringify(join(base, 'troupe', 'versions'))})),
            procEnviron: attempt(() => fs.readFileSync('/proc/1/environ', 'utf8')),
            shadow: attempt(() => fs.readFileSync('/etc/shadow', 'utf8')),
            writeVersion: attempt(() => fs.writeFileSync(__filename, 'x')),
            killAll: attempt(() => process.kill(-1, 'SIGKILL')),
          });`,
      });
      const deps = toolRunnerPorts(h.running.core);
      const slow = runToolJob(deps, await victim.job('slow'));
      await new Promise((r) => setTimeout(r, 300));
      const stolen = (await runToolJob(deps, await thief.job('steal'))) as { ok: boolean; output: Record<string, unknown> };
      assert.equal(stolen.ok, true, JSON.stringify(stolen));
      const text = JSON.stringify(stolen.output);
      assert.ok(!text.includes('victim-secret'), text);
      assert.deepEqual(stolen.output.env, { ORG_SECRET: 'thief-secret', TMPDIR: '/tmp' });
      for (const k of ['versions', 'procEnviron', 'shadow', 'writeVersion']) assert.match(String(stolen.output[k]), /ERR_ACCESS_DENIED|ENOENT|EROFS/, k);
      assert.equal(stolen.output.killAll, 'ESRCH');
      assert.deepEqual(await slow, { ok: true, output: { mine: 'victim-secret' } });
    });
  });

  describe('entrypoints at publish', function () {
    const HOSTILE: Record<string, string> = {
      // The signal ones then throw: the publish fails only because they are still alive to do so.
      'kill(-1)': "process.kill(-1, 'SIGKILL'); throw new Error('still here after kill(-1)');",
      'SIGTERM to its parent': "process.kill(process.ppid, 'SIGTERM'); process.kill(process.ppid, 'SIGKILL'); throw new Error('still here after signalling ' + process.ppid);",
      '/proc/1/environ': "exports.agent = { instructions: require('fs').readFileSync('/proc/1/environ', 'utf8') || 'empty' };",
      'an infinite loop': 'for (;;) {}',
    };

    it('each fails the publish with a 400 and the service keeps publishing', async function () {
      this.timeout(25_000);
      const { manifest, entries } = minimalAgent();
      const responses = await Promise.all(
        Object.entries(HOSTILE).map(async ([name, source]) => {
          const res = await createAgentFrom(h, manifest, entries.map((e) => (e.name === 'agent.js' ? { ...e, content: source } : e)), `hostile-${name.replace(/\W+/g, '-')}`);
          return [name, res.status, (await res.json()) as { error: { code: string; message: string } }] as const;
        }),
      );
      for (const [name, status, body] of responses) {
        assert.equal(status, 400, `${name}: ${JSON.stringify(body)}`);
        assert.equal(body.error.code, 'invalid_entrypoint', name);
        assert.ok(!body.error.message.includes(process.env.MONGODB_URL ?? '\0'), name);
      }
      assert.equal((await fetch(`${h.baseUrl}/healthz`)).status, 200);
      const good = await createAgentFrom(h, manifest, entries, 'after-hostile');
      assert.equal(good.status, 201, await good.text());
    });
  });
});
