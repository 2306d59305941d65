import assert from 'node:assert/strict';
import { TroupeClient } from '../../clients/typescript/src/index.js';
import type { ToolDef } from '../../src/domain/agent.js';
import { agentWith, scriptedAgent } from '../support/agent-fixture.js';
import { observedStatuses } from '../support/api-statuses.js';
import { startHarness, uniqueName, type Harness } from '../support/harness.js';
import { json, until } from '../support/wait.js';

type ErrorBody = { error: { code: string; message: string; param?: string } };
type Doc = { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };

const lookup: ToolDef = {
  name: 'lookup',
  kind: 'external',
  path: 'tools/lookup.json',
  timeout_seconds: 30,
  description: 'Look a thing up.',
  input_schema: { type: 'object' },
  output_schema: { type: 'object' },
};

/**
 * The contract as a client meets it: what /v1/openapi.json declares against what the service answers (the
 * statuses of customer audit item 3; the root hook test/support/api-statuses.ts checks every other response of
 * the run), list paging, a credential in use, and validation messages that name the real problem.
 */
describe('API contract: declared statuses, pages, credentials in use, validation messages', function () {
  this.timeout(60_000);
  let h: Harness;
  let doc: Doc;
  const text = [{ type: 'text', text: 'hi' }];

  before(async () => {
    // A short synchronous wait, so a message waiting on a tool outlasts it.
    h = await startHarness({ env: { TROUPE_SYNC_WAIT_MS: '300' } });
    doc = await json<Doc>(await h.api('/v1/openapi.json'), 200);
  });
  after(async () => h?.close());

  /** The response has `status`, and the document declares it for the operation. */
  async function answers<T = ErrorBody>(res: Promise<Response>, status: number, method: string, template: string): Promise<T> {
    const body = await json<T>(await res, status);
    assert.ok(doc.paths[template]?.[method.toLowerCase()]?.responses[String(status)], `${method} ${template} declares ${status}`);
    return body;
  }

  async function completed(sessionId: string, messageId: string): Promise<void> {
    await until(async () => ((await json<{ status: string }>(await h.api(`/v1/sessions/${sessionId}/messages/${messageId}`), 200)).status === 'completed' ? true : undefined));
  }

  it('answers and declares 202 on the synchronous wait, 409 and 422 on events, 409 on cancel', async () => {
    const { agentId } = await agentWith(h, { tools: [lookup], llm_options: [{ id: 'main', provider: 'scripted', script: 's.json' }], scripts: { main: { turns: [{ tool_calls: [{ name: 'lookup', arguments: {}, id: 'call_1' }] }, { text: 'done' }] } } });
    const sid = (await json<{ id: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST' }), 201)).id;
    const waiting = await answers<{ id: string; status: string }>(h.api(`/v1/sessions/${sid}/messages/sync`, { method: 'POST', json: { parts: text } }), 202, 'POST', '/v1/sessions/{session_id}/messages/sync');
    assert.notEqual(waiting.status, 'completed');
    // The run's check of every answered status (test/support/api-statuses.ts) saw this one.
    assert.ok(observedStatuses().has(`POST /v1/sessions/${sid}/messages/sync 202`), 'the status recorder sees the base API');
    const events = `/v1/sessions/${sid}/events`;
    const wrongCall = await answers(h.api(events, { method: 'POST', json: { type: 'tool.result_submitted', message_id: waiting.id, tool_call_id: 'call_nope', result: {} } }), 409, 'POST', '/v1/sessions/{session_id}/events');
    assert.equal(wrongCall.error.code, 'tool_call_not_pending');
    const key = { 'Idempotency-Key': uniqueName('k') };
    await json(await h.api(events, { method: 'POST', headers: key, json: { type: 'tool.result_submitted', message_id: waiting.id, tool_call_id: 'call_1', result: { a: 1 } } }), 201);
    const reused = await answers(h.api(events, { method: 'POST', headers: key, json: { type: 'tool.result_submitted', message_id: waiting.id, tool_call_id: 'call_1', result: { a: 2 } } }), 422, 'POST', '/v1/sessions/{session_id}/events');
    assert.equal(reused.error.code, 'idempotency_key_reused');
    await completed(sid, waiting.id);
    const cancel = await answers(h.api(`/v1/sessions/${sid}/messages/${waiting.id}/cancel`, { method: 'POST' }), 409, 'POST', '/v1/sessions/{session_id}/messages/{message_id}/cancel');
    assert.equal(cancel.error.code, 'message_not_cancellable');
  });

  it('answers and declares 404 and 422 on session batches, 404 and 409 on agent creation', async () => {
    const unknown = await answers(h.api('/v1/session-batches', { method: 'POST', json: { items: [{ agent_id: 'agt_00000000000000000000000000', message: { content: text } }] } }), 404, 'POST', '/v1/session-batches');
    assert.equal(unknown.error.code, 'agent_not_found');
    const { agentId } = await scriptedAgent(h, [{ text: 'ok' }]);
    const idempotency_key = uniqueName('batch');
    await json(await h.api('/v1/session-batches', { method: 'POST', json: { idempotency_key, items: [{ agent_id: agentId, message: { content: text } }] } }), 201);
    const reused = await answers(h.api('/v1/session-batches', { method: 'POST', json: { idempotency_key, items: [{ agent_id: agentId, message: { content: [{ type: 'text', text: 'other' }] } }] } }), 422, 'POST', '/v1/session-batches');
    assert.equal(reused.error.code, 'idempotency_key_reused');

    const manifest = { name: 'a', sdk: 'troupe-js@1', entrypoint: 'agent.js:agent', llm_options: [{ id: 'main', provider: 'scripted', script: 's.json' }] };
    const missing = await answers(h.api('/v1/agents', { method: 'POST', json: { name: 'a', manifest, source: { type: 'upload', source_snapshot_id: 'snap_00000000000000000000000000' } } }), 404, 'POST', '/v1/agents');
    assert.equal(missing.error.code, 'source_snapshot_not_found');
    const pending = await json<{ source_snapshot_id: string }>(await h.api('/v1/source-snapshots', { method: 'POST', json: { format: 'tar.gz', sha256: '0'.repeat(64), size_bytes: 10 } }), 201);
    const notReady = await answers(h.api('/v1/agents', { method: 'POST', json: { name: 'a', manifest, source: { type: 'upload', source_snapshot_id: pending.source_snapshot_id } } }), 409, 'POST', '/v1/agents');
    assert.equal(notReady.error.code, 'snapshot_not_ready');
  });

  it('pages the credentials in name order, through the typed client too', async () => {
    const names = ['PAGE_A', 'PAGE_B', 'PAGE_C'];
    for (const n of names) await json(await h.api(`/v1/credentials/${n}`, { method: 'PUT', json: { value: `v-${n}` } }), 200);
    const first = await json<{ credentials: { name: string }[]; has_more: boolean; next_cursor: string | null }>(await h.api('/v1/credentials?limit=1'), 200);
    assert.equal(first.credentials.length, 1);
    assert.equal(first.has_more, true);
    assert.equal(first.next_cursor, first.credentials[0].name);
    const client = new TroupeClient({ baseUrl: h.baseUrl, apiKey: h.apiKey });
    const all: string[] = [];
    for await (const c of client.each('credentials', (page) => client.credentials.list({ ...page, limit: 2 }))) all.push(c.name);
    assert.deepEqual(all.filter((n) => n.startsWith('PAGE_')), names);
    assert.deepEqual(all, [...all].sort(), 'name order');
    const last = await client.credentials.list({ after: 'PAGE_B' });
    assert.deepEqual([last.credentials.map((c) => c.name).filter((n) => n.startsWith('PAGE_')), last.has_more, last.next_cursor], [['PAGE_C'], false, null]);
    await json(await h.api('/v1/credentials?limit=0'), 400);
  });

  it("pages a storage binding's files by path, a long path as the cursor too", async () => {
    const binding = await json<{ id: string }>(await h.api('/v1/storage-bindings', { method: 'POST', json: { name: uniqueName('files') } }), 201);
    const org = (await h.running.core.stores.orgs.byName('default'))!;
    // Files are written by tools; the listing reads their records, so records are what this test needs.
    // One path longer than a cursor may be (1,024 characters): its page's cursor is its prefix, and nothing is missed.
    const paths = ['a.txt', `deep/${'x'.repeat(300)}.md`, `long/${'é'.repeat(1100)}`, 'notes/b.md', 'notes/é.md', 'z'];
    for (const path of paths) {
      await h.running.core.stores.storageBindings.putFile({ _id: `${binding.id}:${path}`, org_id: org._id, binding_id: binding.id, path, blob_id: `blob_${path.length}`, size_bytes: path.length, sha256: '0'.repeat(64), updated_at: new Date() });
    }
    const seen: string[] = [];
    let after: string | null = null;
    for (let i = 0; i < 10; i++) {
      const query = `limit=2${after === null ? '' : `&after=${encodeURIComponent(after)}`}`;
      const page: { files: { path: string }[]; has_more: boolean; next_cursor: string | null } = await json(await h.api(`/v1/storage-bindings/${binding.id}/files?${query}`), 200);
      assert.ok(page.files.length <= 2);
      seen.push(...page.files.map((f) => f.path));
      if (!page.has_more) break;
      after = page.next_cursor;
    }
    assert.deepEqual([...new Set(seen)], [...paths].sort());
    const client = new TroupeClient({ baseUrl: h.baseUrl, apiKey: h.apiKey });
    assert.equal((await client.storageBindings.files(binding.id, { limit: 1 })).has_more, true);
  });

  it('refuses deleting a credential a router names (409, naming the router), then deletes it once unused', async () => {
    await json(await h.api('/v1/credentials/ROUTED_KEY', { method: 'PUT', json: { value: 'sk-routed' } }), 200);
    const router = { candidates: [{ model: 'm/a', provider: 'openai', upstream_model: 'a', base_url: 'http://127.0.0.1:9/v1', api_key_credential: 'ROUTED_KEY' }] };
    const routerId = uniqueName('r').toLowerCase().replace(/_/g, '-');
    await json(await h.api(`/v1/routers/${routerId}`, { method: 'PUT', json: router }), 200);
    const refused = await answers(h.api('/v1/credentials/ROUTED_KEY', { method: 'DELETE' }), 409, 'DELETE', '/v1/credentials/{name}');
    assert.equal(refused.error.code, 'credential_in_use');
    assert.match(refused.error.message, new RegExp(routerId));
    const names = (await json<{ credentials: { name: string }[] }>(await h.api('/v1/credentials?limit=100'), 200)).credentials.map((c) => c.name);
    assert.ok(names.includes('ROUTED_KEY'), 'still stored');
    assert.equal((await h.api(`/v1/routers/${routerId}`, { method: 'DELETE' })).status, 204);
    assert.equal((await h.api('/v1/credentials/ROUTED_KEY', { method: 'DELETE' })).status, 204);
  });

  it('names at most 3 routers using a credential, with "…" only when there are more', async () => {
    // Was: exactly 3 routers also got "…" (the refusal asked for 3 and took 3 for "more").
    await json(await h.api('/v1/credentials/SHARED_KEY', { method: 'PUT', json: { value: 'sk-shared' } }), 200);
    const router = { candidates: [{ model: 'm/a', provider: 'openai', upstream_model: 'a', base_url: 'http://127.0.0.1:9/v1', api_key_credential: 'SHARED_KEY' }] };
    const prefix = uniqueName('shared').toLowerCase().replace(/_/g, '-');
    const ids = ['a', 'b', 'c', 'd'].map((s) => `${prefix}-${s}`);
    for (const id of ids.slice(0, 3)) await json(await h.api(`/v1/routers/${id}`, { method: 'PUT', json: router }), 200);
    const three = await json<ErrorBody>(await h.api('/v1/credentials/SHARED_KEY', { method: 'DELETE' }), 409);
    assert.equal(three.error.message, `Credential SHARED_KEY is named by routers (${ids.slice(0, 3).join(', ')}); change or delete them first.`);
    await json(await h.api(`/v1/routers/${ids[3]}`, { method: 'PUT', json: router }), 200);
    const four = await json<ErrorBody>(await h.api('/v1/credentials/SHARED_KEY', { method: 'DELETE' }), 409);
    assert.equal(four.error.message, `Credential SHARED_KEY is named by routers (${ids.slice(0, 3).join(', ')}, …); change or delete them first.`);
    for (const id of ids) assert.equal((await h.api(`/v1/routers/${id}`, { method: 'DELETE' })).status, 204);
    assert.equal((await h.api('/v1/credentials/SHARED_KEY', { method: 'DELETE' })).status, 204);
  });

  it('validation messages name the real problem of a union or a conditional', async () => {
    const sid = (await json<{ id: string }>(await h.api(`/v1/agents/${(await scriptedAgent(h, [{ text: 'ok' }])).agentId}/sessions`, { method: 'POST' }), 201)).id;
    const events = `/v1/sessions/${sid}/events`;
    const video = await json<ErrorBody>(await h.api(events, { method: 'POST', json: { type: 'user.message', content: [{ type: 'video' }] } }), 400);
    assert.deepEqual([video.error.param, video.error.message], ['content[0].type', 'content[0].type must be one of: "text", "file", "image".']);
    const textless = await json<ErrorBody>(await h.api(events, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text: 5 }] } }), 400);
    assert.deepEqual([textless.error.param, textless.error.message], ['content[0].text', 'content[0].text must be string.']);
    const isError = await json<ErrorBody>(await h.api(events, { method: 'POST', json: { type: 'tool.result_submitted', message_id: 'msg_x', tool_call_id: 'c', is_error: 'yes' } }), 400);
    assert.deepEqual([isError.error.param, isError.error.message], ['is_error', 'is_error must be boolean.']);
    const noResult = await json<ErrorBody>(await h.api(events, { method: 'POST', json: { type: 'tool.result_submitted', message_id: 'msg_x', tool_call_id: 'c' } }), 400);
    assert.equal(noResult.error.param, 'result', 'a result that is really missing is still named');
    const cohere = await json<ErrorBody>(await h.api('/v1/routers/r2', { method: 'PUT', json: { candidates: [{ model: 'm', provider: 'cohere', upstream_model: 'c' }] } }), 400);
    assert.equal(cohere.error.param, 'candidates[0].provider');
    assert.match(cohere.error.message, /^candidates\[0\]\.provider must be one of: "openai"/);
  });
});
