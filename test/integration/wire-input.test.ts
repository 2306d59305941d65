import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { WebhookReceiver } from '../fakes/webhook-receiver.js';
import { agentWith } from '../support/agent-fixture.js';
import { createAgentFrom, minimalAgent, reserve, tarGz } from '../support/archives.js';
import { startHarness, type Harness } from '../support/harness.js';
import { json, until } from '../support/wait.js';

/** A `\uD800`-`\uDFFF` escape: JSON.stringify writes a pair as the raw character, so only a lone surrogate shows as one. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/** Writes `request` on a fresh connection and reads until the server closes it (or fails after `ms`). */
function rawExchange(port: number, request: string, ms = 5000): Promise<{ status: number; head: string; body: string }> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1');
    let got = '';
    const timer = setTimeout(() => (sock.destroy(), reject(new Error(`connection not closed in ${ms} ms; got ${JSON.stringify(got.slice(0, 200))}`))), ms);
    sock.on('connect', () => sock.write(request));
    sock.on('data', (d) => (got += d.toString()));
    sock.on('error', () => undefined);
    sock.on('close', () => {
      clearTimeout(timer);
      const split = got.indexOf('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(got)?.[1] ?? 0), head: got.slice(0, split), body: got.slice(split + 4) });
    });
  });
}

/** Wire-level input: text encodings, compressed bodies, what Node's parser refuses, names. */
describe('wire input', function () {
  this.timeout(60_000);
  let h: Harness;
  let fake: FakeLlmUpstream;
  let agentId: string;
  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ env: { TROUPE_MODELS_ALLOW_PRIVATE: '1', TROUPE_WEBHOOKS_ALLOW_PRIVATE: '1' } });
    // The model's answer holds a lone surrogate too (the provider's JSON escapes it): the ledger must not carry it whatever its source.
    fake.reply = { text: 'answer \ud800 end' };
    ({ agentId } = await agentWith(h, { llm_options: [{ id: 'main', provider: 'openai', model: 'gpt-test', base_url: fake.openaiBase }] }));
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });

  const post = (path: string, raw: string) => h.api(path, { method: 'POST', body: raw, headers: { 'Content-Type': 'application/json' } });

  it('makes a lone surrogate U+FFFD alike in the echo, the ledger (page and stream) and the projections', async () => {
    // Was: 201 echoing "\ud800" raw, the events page and SSE carrying it (jq refuses it), the projections U+FFFD.
    const created = await post(`/v1/agents/${agentId}/sessions`, '{"name":"\\ud800 s","llm_api_key":"k"}');
    const createdText = await created.text();
    assert.equal(created.status, 201, createdText);
    assert.doesNotMatch(createdText, SURROGATE_ESCAPE);
    const sid = (JSON.parse(createdText) as { id: string; name: string }).id;
    assert.equal(JSON.parse(createdText).name, '\ufffd s');
    const sent = await post(`/v1/sessions/${sid}/events`, '{"type":"user.message","content":[{"type":"text","text":"\\ud800 hi \\udfff"}]}');
    const sentText = await sent.text();
    assert.equal(sent.status, 201, sentText);
    assert.doesNotMatch(sentText, SURROGATE_ESCAPE);
    const page = await until(async () => {
      const text = await (await h.api(`/v1/sessions/${sid}/events?limit=100`)).text();
      return text.includes('assistant.message_completed') && text;
    });
    assert.doesNotMatch(page, SURROGATE_ESCAPE);
    const texts = JSON.stringify(JSON.parse(page));
    assert.ok(texts.includes('\ufffd hi \ufffd'), 'the user message, well formed');
    assert.ok(texts.includes('answer \ufffd end'), 'the model answer, well formed');
    const stream = await h.api(`/v1/sessions/${sid}/stream`, { headers: { 'Last-Event-ID': `${sid}:0`, Accept: 'text/event-stream' } });
    assert.equal(stream.status, 200);
    const reader = stream.body!.getReader();
    let sse = '';
    for (let read = await reader.read(); !read.done && !sse.includes('answer'); ) {
      sse += new TextDecoder().decode(read.value);
      if (!sse.includes('answer')) read = await reader.read();
    }
    await reader.cancel();
    assert.ok(sse.includes('answer'), 'the stream replayed the ledger');
    assert.doesNotMatch(sse, SURROGATE_ESCAPE);
    const session = await json<{ name: string }>(await h.api(`/v1/sessions/${sid}`), 200);
    assert.equal(session.name, '\ufffd s', 'the BSON projection says the same as the echo');
  });

  it('makes a lone surrogate in a model\u2019s tool call U+FFFD in the webhook body', async () => {
    // Was: the tool.call_requested body carried the model's "\ud800" escape (serde_json refuses it), signed and logged.
    const rx = await WebhookReceiver.start();
    try {
      const tool = { name: 'lookup', kind: 'external' as const, path: 'tools/lookup.json', timeout_seconds: 60, description: 'Look up.', input_schema: { type: 'object', properties: { q: { type: 'string' } } }, output_schema: null };
      const { agentId: toolAgent } = await agentWith(h, { tools: [tool], llm_options: [{ id: 'main', provider: 'openai', model: 'gpt-test', base_url: fake.openaiBase }] });
      await json(await h.api(`/v1/agents/${toolAgent}/webhook`, { method: 'PUT', json: { webhook_url: `${rx.url}/hook`, event_types: ['tool.call_requested'] } }), 200);
      fake.reply = { toolCalls: [{ id: 'call_1', name: 'lookup', arguments: { q: 'Os\ud800lo' } }] };
      const { id: sid } = await json<{ id: string }>(await h.api(`/v1/agents/${toolAgent}/sessions`, { method: 'POST', json: { llm_api_key: 'k' } }), 201);
      await json(await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text: 'find it' }] } }), 201);
      const [hook] = await rx.waitFor(1, '/hook');
      assert.doesNotMatch(hook.rawBody, SURROGATE_ESCAPE);
      assert.equal((JSON.parse(hook.rawBody) as { arguments: { q: string } }).arguments.q, 'Os\ufffdlo');
    } finally {
      fake.reply = { text: 'answer \ud800 end' };
      await rx.close();
    }
  });

  it('makes a lone surrogate U+FFFD in what publish reads from the archive, and in a version stored before that', async () => {
    // Was: the tool's description and schema and the script kept "\ud800" in content_json, and GET of the version echoed it.
    const { manifest, entries } = minimalAgent();
    const file = (name: string, value: unknown) => (entries.find((e) => e.name === name)!.content = JSON.stringify(value));
    file('tools/get_weather.json', { name: 'get_weather', description: 'Weather \ud800 for a city.', input_schema: 'get_weather.input.json', output_schema: 'get_weather.output.json' });
    file('tools/get_weather.input.json', { type: 'object', required: ['city'], properties: { city: { type: 'string', description: 'city \udfff' }, ['k\udc00']: { type: 'string' } } });
    file('script.json', { turns: [{ tool_calls: [{ name: 'get_weather', arguments: { city: 'Os\ud800lo' } }] }, { text: 'mild \udbff' }] });
    assert.match(String(entries.find((e) => e.name === 'script.json')!.content), SURROGATE_ESCAPE, 'the archive holds the escapes');
    const created = await json<{ id: string; active_version_id: string }>(await createAgentFrom(h, manifest, entries), 201);
    const path = `/v1/agents/${created.id}/versions/${created.active_version_id}`;
    const text = await (await h.api(path)).text();
    assert.doesNotMatch(text, SURROGATE_ESCAPE);
    const tool = (JSON.parse(text) as { tools: { name: string; description: string; input_schema: { properties: Record<string, { description?: string }> } }[] }).tools.find((t) => t.name === 'get_weather')!;
    assert.equal(tool.description, 'Weather \ufffd for a city.');
    assert.deepEqual(Object.keys(tool.input_schema.properties), ['city', 'k\ufffd']);
    assert.equal(tool.input_schema.properties.city.description, 'city \ufffd');
    const stored = await h.running.core.db.collection<{ _id: string; content_json: string }>('agent_versions').findOne({ _id: created.active_version_id });
    assert.doesNotMatch(stored!.content_json, SURROGATE_ESCAPE, 'stored well formed');
    assert.match(stored!.content_json, /mild \ufffd/, 'the script too');

    // A version written before content_json was guarded reads well formed as well.
    await h.running.core.db.collection('agent_versions').updateOne({ _id: created.active_version_id as never }, { $set: { content_json: stored!.content_json.replace('Weather \ufffd', 'Weather \\ud800') } });
    const old = await (await h.api(path)).text();
    assert.doesNotMatch(old, SURROGATE_ESCAPE);
    assert.match(old, /Weather \ufffd for a city/);
  });

  it('refuses a request body with a Content-Encoding other than identity, naming it, on the base API and the router', async () => {
    // Was: gzip with Content-Encoding: gzip a 400 malformed_json, a plain body labelled br a 201.
    const body = JSON.stringify({ value: 'sk-test' });
    for (const [enc, payload] of [['gzip', gzipSync(body)], ['br', Buffer.from(body)]] as const) {
      const res = await h.api('/v1/credentials/WIRE_KEY', { method: 'PUT', body: payload, headers: { 'Content-Type': 'application/json', 'Content-Encoding': enc } });
      const err = (await json<{ error: { type: string; code: string; message: string } }>(res, 415)).error;
      assert.deepEqual([err.type, err.code], ['unsupported_media_type', 'unsupported_content_encoding'], enc);
      assert.match(err.message, new RegExp(`"${enc}"`));
      const routed = await fetch(`${h.routerUrl}/v1/chat/completions`, { method: 'POST', body: payload, headers: { 'Content-Type': 'application/json', 'Content-Encoding': enc, Authorization: `Bearer ${h.routingKey}` } });
      assert.equal(routed.status, 415, enc);
      assert.match(await routed.text(), new RegExp(`Content-Encoding \\\\"${enc}\\\\"`));
    }
    const plain = await h.api('/v1/credentials/WIRE_KEY', { method: 'PUT', body, headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'identity' } });
    assert.ok(plain.status < 300, `identity is a plain body: ${plain.status}`);
  });

  it('refuses a Content-Encoding on every kind of route that takes a body: JSON, batch, archive upload, file upload, routed calls', async () => {
    // One check where the body is first accepted (the route table; the router's readBody): no reader may skip it.
    type Refusal = { error: { type: string; code: string; message: string } };
    const refused = async (what: string, res: Response) => {
      const err = (await json<Refusal>(res, 415)).error;
      assert.deepEqual([err.type, err.code], ['unsupported_media_type', 'unsupported_content_encoding'], what);
      assert.match(err.message, /"gzip"/, what);
    };
    const gz = (body: string | Buffer, type: string) => ({ body: gzipSync(body), headers: { 'Content-Type': type, 'Content-Encoding': 'gzip' } });
    await refused('JSON', await h.api('/v1/credentials/WIRE_KEY', { method: 'PUT', ...gz(JSON.stringify({ value: 'sk' }), 'application/json') }));
    const batch = JSON.stringify({ items: [{ agent_id: agentId, message: { content: [{ type: 'text', text: 'hi' }] } }] });
    await refused('batch', await h.api('/v1/session-batches', { method: 'POST', ...gz(batch, 'application/json') }));

    const archive = await tarGz([{ name: 'troupe.json', content: '{}' }]);
    const r = await reserve(h, archive);
    const uploadUrl = r.upload_url.replace(h.running.core.config.publicUrl, h.baseUrl);
    await refused('archive upload', await fetch(uploadUrl, { method: 'PUT', body: gzipSync(archive), headers: { ...r.upload_headers, 'Content-Encoding': 'gzip' } }));
    assert.equal((await fetch(uploadUrl, { method: 'PUT', body: archive, headers: r.upload_headers })).status, 200, 'the same upload unencoded is taken');

    const form = (data: string) => `--b0undary\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\n${data}\r\n--b0undary--\r\n`;
    const formType = 'multipart/form-data; boundary=b0undary';
    await refused('file upload', await h.api('/v1/files', { method: 'POST', ...gz(form('hello'), formType) }));
    await json(await h.api('/v1/files', { method: 'POST', body: form('hello'), headers: { 'Content-Type': formType } }), 201);

    const routed = { model: 'x', messages: [{ role: 'user', content: 'hi' }] };
    for (const [path, envelope] of [['/v1/chat/completions', 'openai'], ['/v1/messages', 'anthropic']] as const) {
      const res = await fetch(`${h.routerUrl}${path}`, { method: 'POST', body: gzipSync(JSON.stringify(routed)), headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', Authorization: `Bearer ${h.routingKey}` } });
      const body = await json<{ error: { code: string; message: string } }>(res, 415);
      assert.equal(body.error.code, 'unsupported_content_encoding', `router ${envelope}`);
      assert.match(body.error.message, /"gzip"/, `router ${envelope}`);
    }
  });

  it('answers a URL or headers past the limit, and bytes that are not HTTP, in the error shape, then closes', async () => {
    // Was: Node's bare "HTTP/1.1 431" with no body.
    for (const url of [h.baseUrl, h.routerUrl]) {
      const port = Number(new URL(url).port);
      const cases = [
        ['long URL', `GET /v1/sessions?x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431, 'headers_too_large'],
        ['big header', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'headers_too_large'],
        ['not HTTP', 'HELLO THERE\r\n\r\n', 400, 'malformed_http'],
      ] as const;
      for (const [what, request, status, code] of cases) {
        const res = await rawExchange(port, request);
        assert.equal(res.status, status, `${url} ${what}`);
        assert.match(res.head, /\r\nConnection: close/i, `${url} ${what}`);
        assert.match(res.head, /\r\nContent-Type: application\/json/i, `${url} ${what}`);
        const err = (JSON.parse(res.body) as { error: { type: string; code: string; message: string } }).error;
        assert.equal(err.code, code, `${url} ${what}`);
        assert.ok(err.type && err.message, `${url} ${what}`);
      }
    }
    assert.equal((await fetch(`${h.baseUrl}/healthz`)).status, 200, 'the server goes on answering');
  });

  it('refuses control, bidirectional and invisible characters in names with a 400 naming the field and the character, and keeps them in message text', async () => {
    // Was: an agent named "\u0000" created; then one named "\u202e" (a right-to-left override: "Trojan Source").
    const cases: [string, string, string, string, unknown][] = [
      ['POST', '/v1/agents', 'name', 'U+0000', { name: 'a\u0000', manifest: {}, source: {} }],
      ['POST', '/v1/agents', 'name', 'U+202E', { name: 'admin\u202enimda', manifest: {}, source: {} }],
      ['POST', '/v1/agents', 'manifest.name', 'U+2066', { name: 'ok', manifest: { name: 'x\u2066y\u2069', sdk: 'troupe-js@1', entrypoint: 'a.js:a', llm_options: [{ id: 'main', provider: 'scripted', script: 's.json' }] }, source: { type: 'upload', source_snapshot_id: 'snap_x' } }],
      ['POST', `/v1/agents/${agentId}/sessions`, 'name', 'U+0007', { name: 'bell\u0007' }],
      ['POST', `/v1/agents/${agentId}/sessions`, 'name', 'U+009B', { name: 'csi\u009b31m' }],
      ['POST', `/v1/agents/${agentId}/sessions`, 'name', 'U+200B', { name: 'ad\u200bmin' }],
      ['POST', `/v1/agents/${agentId}/messages`, 'session.name', 'U+FEFF', { type: 'user.message', content: [{ type: 'text', text: 'hi' }], session: { name: '\ufeffbom' } }],
      ['PUT', '/v1/routers/wire', 'candidates[0].model', 'U+000A', { candidates: [{ model: 'm\nx', provider: 'openai', upstream_model: 'u', api_key_credential: 'WIRE_KEY' }] }],
      ['PUT', '/v1/routers/wire', 'candidates[0].upstream_model', 'U+007F', { candidates: [{ model: 'm', provider: 'openai', upstream_model: 'u\u007f', api_key_credential: 'WIRE_KEY' }] }],
      ['PUT', '/v1/routers/wire', 'candidates[0].model', 'U+202D', { candidates: [{ model: 'gpt\u202d-4', provider: 'openai', upstream_model: 'u', api_key_credential: 'WIRE_KEY' }] }],
    ];
    for (const [method, path, param, char, body] of cases) {
      const err = (await json<{ error: { code: string; param: string; message: string } }>(await h.api(path, { method, json: body }), 400)).error;
      assert.deepEqual([err.param, err.message], [param, `${param} contains ${char}; names may not hold control, bidirectional or invisible characters.`], `${path} ${char}`);
    }
    // Joiners that scripts and emoji need are not refused.
    const joined = '\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645 👨\u200d👩\u200d👧';
    const named = await json<{ id: string; name: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: { name: joined } }), 201);
    assert.equal(named.name, joined);
    const { id: sid } = await json<{ id: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: { name: 'plain name' } }), 201);
    const text = 'tab\there, nul\u0000, bell\u0007, rlo\u202e, zwsp\u200b, c1\u0085';
    await json(await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text }] } }), 201);
    const page = await json<{ events: { data: { content?: { text: string }[] } }[] }>(await h.api(`/v1/sessions/${sid}/events?limit=10`), 200);
    assert.ok(page.events.some((e) => e.data.content?.[0]?.text === text), 'message text is the user\u2019s, control characters and all');
  });
});
