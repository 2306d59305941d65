import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import type { ToolRunJob } from '../../src/domain/actors/tool-runner.js';
import { runToolJob } from '../../actors/tool-runner/run-tool-job.js';
import { waitingToolJob } from '../support/tool-jobs.js';
import { toolRunnerPorts as toolRunnerDeps } from '../../src/roles/actor-ports.js';
import { newId } from '../../src/domain/ids.js';
import { AgentStore } from '../../src/store/agents.js';
import type { Manifest, ToolDef } from '../../src/domain/agent.js';
import { BlobStore } from '../../src/store/blobs.js';
import { tarGz } from '../support/archives.js';
import { startHarness, type Harness } from '../support/harness.js';
import { json } from '../support/wait.js';

interface Binding {
  id: string;
  name: string;
  description: string | null;
  file_count: number;
  size_bytes: number;
  created_at: string;
}

const WRITE = `const fs = require('node:fs'); const path = require('node:path');
exports.handler = async ({ file, text, remove }, ctx) => {
  const target = path.join(ctx.storageDir, file);
  if (remove) { fs.rmSync(target); return { removed: file }; }
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.writeFileSync(target, text);
  return { wrote: file, env_matches: process.env.TROUPE_STORAGE_DIR === ctx.storageDir };
};`;
const READ = `const fs = require('node:fs'); const path = require('node:path');
exports.handler = async ({ file }, ctx) => {
  if (!ctx.storageDir) return { mounted: false };
  const target = path.join(ctx.storageDir, file);
  return { mounted: true, text: fs.existsSync(target) ? fs.readFileSync(target, 'utf8') : null };
};`;

function customTool(name: string, path: string): ToolDef {
  return { name, kind: 'custom', path, timeout_seconds: 5, description: null, input_schema: null, output_schema: null };
}

describe('storage bindings', function () {
  let h: Harness;
  let sandboxDir: string;
  let orgId: string;
  let agentId: string;

  before(async () => {
    sandboxDir = await mkdtemp(join(tmpdir(), 'troupe-storage-test-'));
    h = await startHarness({ roles: ['web'], env: { TROUPE_SANDBOX_DIR: sandboxDir } });
    const core = h.running.core;
    orgId = (await core.stores.orgs.byName('default'))!._id;
    const manifest: Manifest = {
      name: 'files',
      sdk: 'troupe-js@1',
      entrypoint: 'agent.js:agent',
      sandbox: { secrets: [], internet_access: false },
      custom_tools: [
        { name: 'write', path: 'tools/write.js', kind: 'custom', timeout_seconds: 5 },
        { name: 'read', path: 'tools/read.js', kind: 'custom', timeout_seconds: 5 },
      ],
      llm_options: [{ id: 'main', provider: 'scripted', script: 'script.json' }],
    };
    const archive = await tarGz([
      { name: 'troupe.json', content: JSON.stringify(manifest) },
      { name: 'agent.js', content: 'exports.agent = {};' },
      { name: 'tools/write.js', content: WRITE },
      { name: 'tools/read.js', content: READ },
    ]);
    const snapshotId = newId('snapshot');
    await pipeline(Readable.from([archive]), new BlobStore(core.db).upload('snapshots', snapshotId, 'source.tar.gz', { org_id: orgId }));
    const tools = [customTool('write', 'tools/write.js'), customTool('read', 'tools/read.js')];
    const { agent } = await new AgentStore(core.db).create(
      { id: newId('agent'), orgId, name: 'files' },
      { id: newId('version'), snapshotId, content: { manifest, llm_options: manifest.llm_options, tools, scripts: { main: { turns: [{ text: 'ok' }] } }, entrypoint: manifest.entrypoint } },
    );
    agentId = agent._id;
  });
  after(async () => {
    await h?.close();
    await rm(sandboxDir, { recursive: true, force: true });
  });

  const createBinding = async (name: string) => json<Binding>(await h.api('/v1/storage-bindings', { method: 'POST', json: { name, description: 'shared notes' } }), 201);
  const createSession = (storage_binding_id?: string) => h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: storage_binding_id ? { storage_binding_id } : {} });
  const run = async (sessionId: string, tool: string, args: Record<string, unknown>) => {
    const job: ToolRunJob = { org_id: orgId, session_id: sessionId, message_id: newId('message'), attempt: 1, tool_call_id: `call_${newId('message').slice(-8)}`, tool_name: tool, arguments: args };
    return runToolJob(toolRunnerDeps(h.running.core), await waitingToolJob(h.running.core, job));
  };

  it('creates, lists and reads bindings; names are unique per organization', async () => {
    const name = `notes-${Date.now()}`;
    const b = await createBinding(name);
    assert.match(b.id, /^sb_/);
    assert.deepEqual([b.name, b.description, b.file_count, b.size_bytes], [name, 'shared notes', 0, 0]);
    assert.deepEqual(await json(await h.api(`/v1/storage-bindings/${b.id}`), 200), b);
    const list = await json<{ storage_bindings: Binding[] }>(await h.api('/v1/storage-bindings?limit=100'), 200);
    assert.ok(list.storage_bindings.some((x) => x.id === b.id));
    const dup = await json<{ error: { code: string; param: string } }>(await h.api('/v1/storage-bindings', { method: 'POST', json: { name } }), 409);
    assert.deepEqual([dup.error.code, dup.error.param], ['storage_binding_name_taken', 'name']);
    const bad = await json<{ error: { param: string } }>(await h.api('/v1/storage-bindings', { method: 'POST', json: { name: '../x' } }), 400);
    assert.equal(bad.error.param, 'name');
    await json(await h.api(`/v1/storage-bindings/sb_doesnotexist`), 404);
  });

  it('mounts the binding read-write into custom tools; the next session sees the files', async () => {
    const b = await createBinding(`shared-${Date.now()}`);
    const first = await json<{ id: string; storage_binding_id: string }>(await createSession(b.id), 201);
    assert.equal(first.storage_binding_id, b.id);
    assert.deepEqual(await run(first.id, 'write', { file: 'notes/today.txt', text: 'remember the milk' }), { ok: true, output: { wrote: 'notes/today.txt', env_matches: true } });
    assert.deepEqual(await run(first.id, 'write', { file: 'scratch.txt', text: 'temporary' }), { ok: true, output: { wrote: 'scratch.txt', env_matches: true } });

    const second = await json<{ id: string }>(await createSession(b.id), 201);
    assert.deepEqual(await run(second.id, 'read', { file: 'notes/today.txt' }), { ok: true, output: { mounted: true, text: 'remember the milk' } });
    assert.deepEqual(await run(second.id, 'write', { file: 'scratch.txt', remove: true }), { ok: true, output: { removed: 'scratch.txt' } });
    assert.deepEqual(await run(first.id, 'read', { file: 'scratch.txt' }), { ok: true, output: { mounted: true, text: null } }, 'a deletion persists too');

    const files = await json<{ files: { path: string; size_bytes: number }[] }>(await h.api(`/v1/storage-bindings/${b.id}/files`), 200);
    assert.deepEqual(files.files.map((f) => [f.path, f.size_bytes]), [['notes/today.txt', 17]]);
    const read = await json<Binding>(await h.api(`/v1/storage-bindings/${b.id}`), 200);
    assert.deepEqual([read.file_count, read.size_bytes], [1, 17]);

    // A session without a binding gets no storage, and another binding is a separate area.
    const plain = await json<{ id: string }>(await createSession(), 201);
    assert.deepEqual(await run(plain.id, 'read', { file: 'notes/today.txt' }), { ok: true, output: { mounted: false } });
    const other = await createBinding(`other-${Date.now()}`);
    const third = await json<{ id: string }>(await createSession(other.id), 201);
    assert.deepEqual(await run(third.id, 'read', { file: 'notes/today.txt' }), { ok: true, output: { mounted: true, text: null } });
  });

  it('refuses an unknown or foreign binding at session creation with 404', async () => {
    const err = await json<{ error: { code: string } }>(await createSession('sb_doesnotexist'), 404);
    assert.equal(err.error.code, 'storage_binding_not_found');
    const viaMessage = await h.api(`/v1/agents/${agentId}/messages`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text: 'hi' }], session: { storage_binding_id: 'sb_doesnotexist' } } });
    assert.equal(viaMessage.status, 404);
    const other = await h.running.core.stores.orgs.create(`storage-other-${Date.now()}`);
    const { key } = await h.running.core.stores.apiKeys.create(other._id, 'api');
    const theirs = await json<Binding>(await h.api('/v1/storage-bindings', { method: 'POST', json: { name: 'theirs' }, headers: { Authorization: `Bearer ${key}` } }), 201);
    await json(await createSession(theirs.id), 404);
    await json(await h.api(`/v1/storage-bindings/${theirs.id}`), 404);
    await json(await h.api(`/v1/storage-bindings/${theirs.id}`, { method: 'DELETE' }), 404);
  });

  it('refuses to delete a binding sessions use (409), then deletes it and its files', async () => {
    const b = await createBinding(`doomed-${Date.now()}`);
    const s = await json<{ id: string }>(await createSession(b.id), 201);
    await run(s.id, 'write', { file: 'a.txt', text: 'bytes' });
    const blobs = h.running.core.db.collection('storage.files');
    assert.equal(await blobs.countDocuments({ 'metadata.binding_id': b.id }), 1);
    const busy = await json<{ error: { code: string; message: string } }>(await h.api(`/v1/storage-bindings/${b.id}`, { method: 'DELETE' }), 409);
    assert.equal(busy.error.code, 'storage_binding_in_use');
    assert.match(busy.error.message, new RegExp(s.id));
    await json(await h.api(`/v1/storage-bindings/${b.id}`), 200);
    await h.running.core.stores.sessions.remove(orgId, s.id);
    const del = await h.api(`/v1/storage-bindings/${b.id}`, { method: 'DELETE' });
    assert.equal(del.status, 204);
    await json(await h.api(`/v1/storage-bindings/${b.id}`), 404);
    await json(await h.api(`/v1/storage-bindings/${b.id}`, { method: 'DELETE' }), 404);
    assert.equal(await blobs.countDocuments({ 'metadata.binding_id': b.id }), 0);
    assert.equal(await h.running.core.db.collection('storage_files').countDocuments({ binding_id: b.id }), 0);
  });

  it('documents the resource in the OpenAPI document', async () => {
    const doc = await json<{ paths: Record<string, Record<string, { responses: Record<string, unknown> }>> }>(await h.api('/v1/openapi.json'), 200);
    for (const m of ['get', 'post']) assert.ok(doc.paths['/v1/storage-bindings'][m]);
    for (const m of ['get', 'delete']) assert.ok(doc.paths['/v1/storage-bindings/{storage_binding_id}'][m]);
  });
});
