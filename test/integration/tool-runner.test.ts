import assert from 'node:assert/strict';
import { mkdtemp, readdir, readlink, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { SESSION } from '../../src/domain/actors/session.js';
import { TOOL_RUNNER, toolRunJobId, type ToolRunJob } from '../../src/domain/actors/tool-runner.js';
import { runToolJob, type ToolRunnerDeps } from '../../actors/tool-runner/run-tool-job.js';
import { toolRunnerPorts as toolRunnerDeps } from '../../src/roles/actor-ports.js';
import { newId } from '../../src/domain/ids.js';
import type { SandboxRequest } from '../../src/lib/sandbox/types.js';
import { buildSession } from '../../src/app/sessions/create-session.js';
import { AgentStore, type AgentVersionDoc } from '../../src/store/agents.js';
import type { Manifest, ToolDef } from '../../src/domain/agent.js';
import { BlobStore } from '../../src/store/blobs.js';
import { tarGz } from '../support/archives.js';
import { waitingToolJob } from '../support/tool-jobs.js';
import type { MessageStatus } from '../../src/domain/ledger.js';
import { startHarness, type Harness } from '../support/harness.js';
import { until } from '../support/wait.js';

const ADD_SCHEMA = { type: 'object', required: ['a', 'b'], properties: { a: { type: 'number' }, b: { type: 'number' } }, additionalProperties: false };

function customTool(name: string, path: string, input_schema: Record<string, unknown> | null = null): ToolDef {
  return { name, kind: 'custom', path, timeout_seconds: 5, description: null, input_schema, output_schema: null };
}

/** A version written straight into the store, with its archive uploaded to GridFS by hand (no publish). */
async function customToolVersion(h: Harness): Promise<{ orgId: string; version: AgentVersionDoc }> {
  const core = h.running.core;
  const org = (await core.stores.orgs.byName('default'))!;
  const manifest: Manifest = {
    name: 'tools',
    sdk: 'troupe-js@1',
    entrypoint: 'agent.js:agent',
    sandbox: { secrets: ['DECLARED', 'FROM_CREDENTIAL'], internet_access: false },
    custom_tools: [
      { name: 'add', path: 'tools/add.js', kind: 'custom', timeout_seconds: 5 },
      { name: 'secrets', path: './tools/secrets.js', kind: 'custom', timeout_seconds: 5 },
      { name: 'ext', path: 'tools/ext.json', kind: 'external', timeout_seconds: 5 },
    ],
    llm_options: [{ id: 'main', provider: 'scripted', script: 'script.json' }],
  };
  const archive = await tarGz([
    { name: 'troupe.json', content: JSON.stringify(manifest) },
    { name: 'agent.js', content: 'exports.agent = { instructions: "x" };' },
    { name: 'tools/add.js', content: 'exports.handler = async ({ a, b }) => ({ sum: a + b });' },
    { name: 'tools/secrets.js', content: 'exports.handler = async (_a, ctx) => ({ secrets: ctx.secrets, env: { ...process.env } });' },
    { name: 'lib/alias.js', type: 'symlink', linkname: '../tools/add.js' },
  ]);
  const snapshotId = newId('snapshot');
  await pipeline(Readable.from([archive]), new BlobStore(core.db).upload('snapshots', snapshotId, 'source.tar.gz', { org_id: org._id }));
  const tools = [customTool('add', 'tools/add.js', ADD_SCHEMA), customTool('secrets', './tools/secrets.js'), { ...customTool('ext', 'tools/ext.json'), kind: 'external' as const }];
  const { version } = await new AgentStore(core.db).create(
    { id: newId('agent'), orgId: org._id, name: 'tools' },
    { id: newId('version'), snapshotId, content: { manifest, llm_options: manifest.llm_options, tools, scripts: {}, entrypoint: manifest.entrypoint } },
  );
  return { orgId: org._id, version };
}

describe('tool-runner', function () {
  let h: Harness;
  let sandboxDir: string;
  let orgId: string;
  let version: AgentVersionDoc;
  let sessionId: string;

  /** A job for a call its message waits on (the message saved first, as a turn does). */
  function job(tool: string, args: Record<string, unknown>, status?: MessageStatus): Promise<ToolRunJob> {
    return waitingToolJob(h.running.core, { org_id: orgId, session_id: sessionId, message_id: newId('message'), attempt: 1, tool_call_id: `call_${newId('message').slice(-8)}`, tool_name: tool, arguments: args }, status);
  }

  before(async () => {
    sandboxDir = await mkdtemp(join(tmpdir(), 'troupe-tool-runner-test-'));
    h = await startHarness({ roles: ['worker'], env: { TROUPE_SANDBOX_DIR: sandboxDir } });
    ({ orgId, version } = await customToolVersion(h));
    const core = h.running.core;
    await core.stores.credentials.put(orgId, 'FROM_CREDENTIAL', 'cred-value');
    await core.stores.credentials.put(orgId, 'DECLARED', 'overridden-by-session');
    await core.stores.credentials.put(orgId, 'UNDECLARED', 'never-seen');
    const session = buildSession(core.box, orgId, version, { secrets: { DECLARED: 'session-value', UNDECLARED: 'also-never-seen' } }, { priority: 'interactive' });
    await core.stores.sessions.insert(session);
    sessionId = session._id;
  });
  after(async () => {
    await h.close();
    await rm(sandboxDir, { recursive: true, force: true });
  });

  it('runs a custom tool from the extracted archive, extracting each version once', async () => {
    const deps = toolRunnerDeps(h.running.core);
    assert.deepEqual(await runToolJob(deps, await job('add', { a: 2, b: 40 })), { ok: true, output: { sum: 42 } });
    const dir = join(sandboxDir, 'versions', version._id);
    const first = await stat(join(dir, 'tools', 'add.js'));
    assert.deepEqual(await runToolJob(deps, await job('add', { a: 1, b: 1 })), { ok: true, output: { sum: 2 } });
    assert.equal((await stat(join(dir, 'tools', 'add.js'))).ino, first.ino);
    assert.equal(await readlink(join(dir, 'lib', 'alias.js')), '../tools/add.js');
    assert.deepEqual((await readdir(join(sandboxDir, 'versions'))).filter((n) => n.startsWith('.partial')), []);
    assert.deepEqual(await readdir(join(sandboxDir, 'scratch')), [], 'scratch dirs are removed after each call');
  });

  it('holds the version while a call runs and lets it go after, so only versions in use are kept from eviction', async () => {
    const real = toolRunnerDeps(h.running.core);
    let during: string[] = [];
    const deps: ToolRunnerDeps = { ...real, sandbox: async (req) => ((during = await readdir(join(sandboxDir, 'leases'))), real.sandbox(req)) };
    assert.deepEqual(await runToolJob(deps, await job('add', { a: 2, b: 3 })), { ok: true, output: { sum: 5 } });
    assert.deepEqual(during.map((n) => n.slice(0, n.lastIndexOf('.'))), [version._id], 'leased while it ran');
    // The lease file goes a moment after the call (release does not wait for the disk).
    assert.ok(await until(async () => (await readdir(join(sandboxDir, 'leases'))).length === 0, 2000).then(() => true, () => false), 'released after');
  });

  it('refuses arguments that do not match input_schema without running the tool', async () => {
    const runs: SandboxRequest[] = [];
    const real = toolRunnerDeps(h.running.core);
    const deps: ToolRunnerDeps = { ...real, sandbox: (req) => (runs.push(req), real.sandbox(req)) };
    const r = await runToolJob(deps, await job('add', { a: 'two', b: 2 }));
    assert.equal(r?.ok, false);
    assert.match((r as { error: string }).error, /^arguments do not match input_schema: arguments\/a must be number/);
    assert.equal(runs.length, 0);
  });

  it('runs nothing for a call that no longer waits: a cancelled message\'s queued tool does not run, and nothing is sent', async () => {
    const runs: SandboxRequest[] = [];
    const real = toolRunnerDeps(h.running.core);
    const deps: ToolRunnerDeps = { ...real, sandbox: (req) => (runs.push(req), real.sandbox(req)) };
    assert.equal(await runToolJob(deps, await job('add', { a: 1, b: 2 }, 'cancelled')), null);
    assert.equal(await runToolJob(deps, { ...(await job('add', { a: 1, b: 2 })), tool_call_id: 'call_answered' }), null, 'a call the message does not wait on');
    assert.equal(runs.length, 0);
    assert.deepEqual(await runToolJob(deps, await job('add', { a: 1, b: 2 }, 'running')), { ok: true, output: { sum: 3 } });
    assert.equal(runs.length, 1);
  });

  it('passes only declared secrets: the session value over the stored credential', async () => {
    const r = await runToolJob(toolRunnerDeps(h.running.core), await job('secrets', {}));
    const expected = { DECLARED: 'session-value', FROM_CREDENTIAL: 'cred-value' };
    const output = (r as { output: { secrets: unknown; env: Record<string, string> } }).output;
    assert.deepEqual(output.secrets, expected);
    assert.deepEqual({ ...output.env, TMPDIR: undefined }, { ...expected, TMPDIR: undefined });
  });

  it('answers with an error for an unknown tool, an external tool or another org', async () => {
    const deps = toolRunnerDeps(h.running.core);
    assert.deepEqual(await runToolJob(deps, await job('nope', {})), { ok: false, error: 'the agent has no tool named "nope"' });
    assert.deepEqual(await runToolJob(deps, await job('ext', {})), { ok: false, error: 'tool ext is not a custom tool' });
    assert.deepEqual(await runToolJob(deps, { ...(await job('add', { a: 1, b: 2 })), org_id: 'org_other' }), { ok: false, error: `session ${sessionId} not found` });
  });

  it('takes a job from the tool-runner queue and sends tool.completed to the session shard', async () => {
    const { dispatcher } = h.running.core.plane;
    const j = await job('add', { a: 20, b: 3 });
    await dispatcher.send([{ to: TOOL_RUNNER, name: 'tool.run', data: j, job_id: toolRunJobId(j) }]);
    const commandId = `toolres-${j.message_id}-${j.attempt}-${j.tool_call_id}`;
    const queue = dispatcher.queueOf(SESSION, sessionId);
    let found = null;
    for (let i = 0; i < 100 && !found; i++) {
      found = await queue.getJob(`${sessionId}.${commandId}`);
      if (!found) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(found, 'the tool.completed command reached the session queue');
    assert.deepEqual(found.data.command, { kind: 'tool.completed', command_id: commandId, message_id: j.message_id, attempt: 1, tool_call_id: j.tool_call_id, result: { ok: true, output: { sum: 23 } } });
  });
});
