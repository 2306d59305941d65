import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { candidate } from '../fakes/llm-conversation.js';
import { agentWith, scriptedAgent } from '../support/agent-fixture.js';
import { createAgentFrom, minimalAgent } from '../support/archives.js';
import { startHarness, type Harness } from '../support/harness.js';
import { json } from '../support/wait.js';

const text = (t: string) => [{ type: 'text', text: t }];

/** Every document of every collection of the test database, as one string. */
async function allDocuments(h: Harness): Promise<string> {
  const mongo = new MongoClient(h.env.MONGODB_URL, { directConnection: true });
  try {
    const db = mongo.db(h.env.TROUPE_MONGODB_DB);
    const out: string[] = [];
    for (const c of await db.listCollections().toArray()) out.push(JSON.stringify(await db.collection(c.name).find({}).toArray()));
    return out.join('\n');
  } finally {
    await mongo.close();
  }
}

describe('security: provider text is scrubbed of known secrets', function () {
  this.timeout(60_000);
  let h: Harness;
  let fake: FakeLlmUpstream;
  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ env: { TROUPE_SESSION_SHARDS: '2' } });
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });

  it('never stores, logs or returns a key or secret a provider echoes, in an error or in an answer', async () => {
    const key = `sk-canary-key-${Date.now()}`;
    const secret = `canary-secret-${Date.now()}`;
    const { agentId } = await agentWith(h, { llm_options: [{ id: 'main', provider: 'openai', model: 'gpt-test', base_url: fake.openaiBase }], secrets: ['OTHER'] });
    const sid = (await json<{ id: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: { llm_api_key: key, secrets: { OTHER: secret } } }), 201)).id;
    // What OpenAI really answers to a bad key, plus a secret for good measure.
    fake.failNextSaying(401, (req) => `Incorrect API key provided: ${String(req.headers.authorization).slice(7)}. Also ${secret}.`);
    const failed = await json<{ status: string; error: string }>(await h.api(`/v1/sessions/${sid}/messages/sync`, { method: 'POST', json: { parts: text('one') } }), 200);
    assert.equal(failed.status, 'failed');
    assert.match(failed.error, /Incorrect API key provided: \[redacted\]\. Also \[redacted\]\./);
    fake.reply = () => ({ text: `your key is ${key} and ${JSON.stringify(secret).slice(1, -1)}` });
    const answered = await json<{ status: string; output: { parts: { text: string }[] } }>(await h.api(`/v1/sessions/${sid}/messages/sync`, { method: 'POST', json: { parts: text('two') } }), 200);
    assert.equal(answered.status, 'completed');
    assert.equal(answered.output.parts[0].text, 'your key is [redacted] and [redacted]');
    for (const path of [`/v1/sessions/${sid}`, `/v1/sessions/${sid}/events?limit=100`, `/v1/sessions/${sid}/messages`, `/v1/sessions/${sid}/transcript`]) {
      const body = await (await h.api(path)).text();
      assert.ok(!body.includes(key) && !body.includes(secret), path);
    }
    assert.ok(!h.logs().includes(key) && !h.logs().includes(secret), 'never logged');
    const docs = await allDocuments(h);
    assert.ok(!docs.includes(key) && !docs.includes(secret), 'never stored in the clear');
  });

  it('scrubs a routed candidate key from the error the routing client gets', async () => {
    const upstreamKey = `sk-routed-canary-${Date.now()}`;
    assert.equal((await h.api('/v1/credentials/ROUTED_KEY', { method: 'PUT', json: { value: upstreamKey } })).status, 200);
    assert.equal((await h.api('/v1/routers/scrub', { method: 'PUT', json: { candidates: [candidate(fake, 'openai', 'openai/m', { api_key_credential: 'ROUTED_KEY' })] } })).status, 200);
    fake.failNextSaying(400, (req) => `Incorrect API key provided: ${String(req.headers.authorization).slice(7)}`);
    const res = await fetch(`${h.routerUrl}/scrub/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${h.routingKey}` }, body: JSON.stringify({ model: 'service/routing', messages: [{ role: 'user', content: 'hi' }] }) });
    const body = await res.text();
    assert.equal(res.status, 400, body);
    assert.match(body, /\[redacted\]/);
    assert.ok(!body.includes(upstreamKey) && !h.logs().includes(upstreamKey));
  });
});

describe('security: model endpoints get the webhook URL guard', function () {
  this.timeout(60_000);
  let h: Harness;
  let fake: FakeLlmUpstream;
  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ env: { TROUPE_SESSION_SHARDS: '2', TROUPE_MODELS_ALLOW_PRIVATE: '0' } });
    assert.equal((await h.api('/v1/credentials/FAKE_KEY', { method: 'PUT', json: { value: 'sk-guarded' } })).status, 200);
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });
  beforeEach(() => fake.reset());

  it('refuses private, plain-HTTP and credentialed base_urls for router candidates at save', async () => {
    const cases: [string, string][] = [
      [fake.openaiBase, 'base_url_not_https'],
      ['https://127.0.0.1/v1', 'base_url_not_public'],
      ['https://169.254.169.254/latest', 'base_url_not_public'],
      ['https://[::1]/v1', 'base_url_not_public'],
      ['https://10.1.2.3/v1', 'base_url_not_public'],
      ['https://user:pw@api.example.com/v1', 'base_url_has_credentials'],
    ];
    for (const [url, code] of cases) {
      const res = await h.api('/v1/routers/r1', { method: 'PUT', json: { candidates: [{ ...candidate(fake, 'openai', 'openai/m'), base_url: url }] } });
      const body = await json<{ error: { code: string; param: string } }>(res, 400);
      assert.equal(body.error.code, code, url);
      assert.equal(body.error.param, 'candidates[0].base_url');
    }
  });

  it('refuses a private base_url in a manifest at publish', async () => {
    const { manifest, entries } = minimalAgent();
    const m = { ...manifest, llm_options: [{ id: 'main', provider: 'openai', model: 'm', base_url: 'https://127.0.0.1:9/v1' }] };
    const res = await createAgentFrom(h, m, entries);
    const body = await json<{ error: { code: string; param: string } }>(res, 400);
    assert.equal(body.error.code, 'base_url_not_public');
    assert.equal(body.error.param, 'manifest.llm_options[0].base_url');
  });

  it('refuses to connect to a private endpoint saved before the guard, in turns and in routing', async () => {
    const { agentId } = await agentWith(h, { llm_options: [{ id: 'main', provider: 'openai', model: 'm', base_url: fake.openaiBase }] });
    const sid = (await json<{ id: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: { llm_api_key: 'sk-must-not-travel' } }), 201)).id;
    const m = await json<{ status: string; error: string }>(await h.api(`/v1/sessions/${sid}/messages/sync`, { method: 'POST', json: { parts: text('hi') } }), 200);
    assert.equal(m.status, 'failed');
    assert.match(m.error, /refused openai upstream/);
    const org = (await h.running.core.stores.orgs.byName('default'))!;
    await h.running.core.stores.routers.put(org._id, 'legacy', { default: false, policy: 'priority', candidates: [{ ...candidate(fake, 'openai', 'openai/m'), reasoning_efforts: [], tools: true, thinking: false, context_window: 100_000, input_price: 1, output_price: 1 } as never] });
    const res = await fetch(`${h.routerUrl}/legacy/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${h.routingKey}` }, body: JSON.stringify({ model: 'service/routing', messages: [{ role: 'user', content: 'hi' }] }) });
    assert.equal(res.status, 502, await res.text());
    assert.equal(fake.requests.length, 0, 'no request reached the private address');
  });
});

describe('security: file references and hostile archive names', function () {
  this.timeout(60_000);
  let h: Harness;
  before(async () => {
    h = await startHarness({ roles: ['web', 'worker'], env: { TROUPE_SESSION_SHARDS: '2' } });
  });
  after(async () => h?.close());

  async function upload(key: string): Promise<string> {
    const form = new FormData();
    form.append('file', new Blob(['hello']), 'a.txt');
    return (await json<{ id: string }>(await h.api('/v1/files', { method: 'POST', body: form, headers: { Authorization: `Bearer ${key}` } }), 201)).id;
  }

  it('answers 404 for a file_id of another org, in every place content is accepted', async () => {
    const other = await h.running.core.stores.orgs.create(`files-other-${Date.now()}`);
    const { key: otherKey } = await h.running.core.stores.apiKeys.create(other._id, 'api');
    const theirs = await upload(otherKey);
    const mine = await upload(h.apiKey);
    const { agentId } = await scriptedAgent(h, [{ text: 'ok' }]);
    const sid = (await json<{ id: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST' }), 201)).id;
    const withFile = (id: string) => [{ type: 'text', text: 'see' }, { type: 'file', file_id: id }];
    const attempts: [string, unknown, string][] = [
      [`/v1/sessions/${sid}/events`, { type: 'user.message', content: withFile(theirs) }, 'content[1].file_id'],
      [`/v1/sessions/${sid}/messages/sync`, { parts: withFile(theirs) }, 'parts[1].file_id'],
      [`/v1/agents/${agentId}/messages`, { type: 'user.message', content: withFile('file_does_not_exist') }, 'content[1].file_id'],
    ];
    for (const [path, body, param] of attempts) {
      const err = await json<{ error: { code: string; param: string } }>(await h.api(path, { method: 'POST', json: body }), 404);
      assert.deepEqual([err.error.code, err.error.param], ['file_not_found', param], path);
    }
    assert.equal((await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: withFile(mine) } })).status, 201);
    // In a batch, such an item fails on its own, like any invalid item.
    const batch = await json<{ sessions: { status: string; error: string | null }[] }>(
      await h.api('/v1/session-batches', { method: 'POST', json: { items: [{ agent_id: agentId, message: { content: withFile(mine) } }, { agent_id: agentId, message: { content: withFile(theirs) } }] } }),
      201,
    );
    assert.deepEqual(batch.sessions.map((i) => i.status === 'failed'), [false, true]);
    assert.equal(batch.sessions[1].error, `No such file: ${theirs} (items[1].message.content[1].file_id)`);
  });

  it('refuses backslash traversal and drive letters with a 400, never a 500', async () => {
    const { manifest, entries } = minimalAgent();
    for (const name of ['..\\..\\evil.js', 'ok\\..\\..\\evil.js', 'C:\\evil.js', 'a/C:evil.js', 'D:/x.js']) {
      const res = await createAgentFrom(h, manifest, [...entries, { name, content: 'x' }]);
      const err = await json<{ error: { code: string } }>(res, 400);
      assert.match(err.error.code, /^archive_(path_traversal|absolute_path)$/, name);
    }
    const res = await createAgentFrom(h, manifest, [...entries, { name: 'l', type: 'symlink', linkname: '..\\..\\etc\\passwd' }]);
    assert.equal((await json<{ error: { code: string } }>(res, 400)).error.code, 'archive_link_escape');
  });
});
