import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../support/harness.js';

async function errorOf(res: Response): Promise<{ type: string; code: string; message: string; param?: string }> {
  assert.match(res.headers.get('content-type') ?? '', /application\/json/);
  const body = (await res.json()) as { error: { type: string; code: string; message: string; param?: string } };
  assert.ok(body.error, 'error body has an error object');
  assert.equal(typeof body.error.type, 'string');
  assert.equal(typeof body.error.code, 'string');
  assert.equal(typeof body.error.message, 'string');
  return body.error;
}

describe('HTTP basics', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(async () => {
    await h?.close();
  });

  it('answers /healthz without a key', async () => {
    const res = await fetch(`${h.baseUrl}/healthz`);
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { status: string }).status, 'ok');
    assert.ok(res.headers.get('x-request-id'));
  });

  it('answers /readyz 200 when Mongo, Redis and the subscriber are up', async () => {
    const res = await fetch(`${h.baseUrl}/readyz`);
    assert.equal(res.status, 200);
    const body = (await res.json()) as { checks: { name: string; ok: boolean }[] };
    assert.deepEqual(body.checks.map((c) => [c.name, c.ok]), [['mongodb', true], ['redis', true], ['redis_subscriber', true]]);
  });

  it('401s without a key, with a bad key and with a non-bearer header', async () => {
    for (const auth of [undefined, 'Bearer nope-not-a-key', `Basic ${h.apiKey}`]) {
      const res = await fetch(`${h.baseUrl}/v1/credentials`, { headers: auth ? { Authorization: auth } : {} });
      assert.equal(res.status, 401, `auth ${auth}`);
      assert.equal((await errorOf(res)).type, 'authentication_error');
    }
  });

  it('403s a routing key on the base API', async () => {
    const res = await h.api('/v1/credentials', { headers: { Authorization: `Bearer ${h.routingKey}` } });
    assert.equal(res.status, 403);
    assert.equal((await errorOf(res)).type, 'permission_error');
  });

  it('404s an unknown route in the error shape', async () => {
    const res = await h.api('/v1/nope');
    assert.equal(res.status, 404);
    assert.equal((await errorOf(res)).code, 'route_not_found');
  });

  it('400s malformed JSON', async () => {
    const res = await h.api('/v1/credentials/OPENAI_API_KEY', { method: 'PUT', body: '{"value": ', headers: { 'Content-Type': 'application/json' } });
    assert.equal(res.status, 400);
    const err = await errorOf(res);
    assert.equal(err.type, 'invalid_request_error');
    assert.equal(err.code, 'malformed_json');
  });

  it('400s a schema violation and names the field', async () => {
    const res = await h.api('/v1/credentials/OPENAI_API_KEY', { method: 'PUT', json: { value: 42 } });
    assert.equal(res.status, 400);
    assert.equal((await errorOf(res)).param, 'value');
  });

  it('400s a query value outside the values the route documents, naming the parameter', async () => {
    // Both were answered as if absent: ?format=xml got JSON, ?deltas=yes a stream without deltas.
    for (const [path, param, values] of [
      ['/v1/sessions/ses_x/transcript?format=xml', 'format', '"json", "text"'],
      ['/v1/sessions/ses_x/stream?deltas=yes', 'deltas', '"true", "false"'],
      ['/v1/sessions/ses_x/transcript?format=text&format=json', 'format', '"json", "text"'],
    ]) {
      const res = await h.api(path);
      assert.equal(res.status, 400, path);
      const err = await errorOf(res);
      assert.deepEqual([err.code, err.param, err.message], ['invalid_request', param, `${param} must be one of: ${values}.`], path);
    }
    assert.equal((await h.api('/v1/sessions/ses_x/transcript?format=text')).status, 404, 'a listed value goes on to the handler');
  });

  it('400s a metadata filter whose key no session can have, naming the parameter', async () => {
    // Was a 200 listing every session: the filter was dropped without a word.
    for (const param of ['metadata.', 'metadata.a b', `metadata.${'k'.repeat(65)}`, 'metadata.a.b']) {
      const res = await h.api(`/v1/sessions?${encodeURIComponent(param)}=x`);
      assert.equal(res.status, 400, param);
      const err = await errorOf(res);
      assert.deepEqual([err.code, err.param], ['invalid_request', param], param);
      assert.match(err.message, /^metadata\.<key> needs a key of 1-64 characters from \[A-Za-z0-9_-\]/, param);
    }
    assert.equal((await h.api('/v1/sessions?metadata.team_1-a=x')).status, 200, 'a key sessions can have is a filter');
  });

  it('400s a list cursor that is not one the list hands out', async () => {
    // Was a 200: a garbage cursor was compared as a position, so the page came back empty (or whole) without a word.
    for (const path of ['/v1/sessions?after=garbage', '/v1/agents?after=%00', '/v1/files?after=ses_01m86x92bs8mxten2nx4hey4qd', '/v1/storage-bindings?after=sb_x']) {
      const res = await h.api(path);
      assert.equal(res.status, 400, path);
      const err = await errorOf(res);
      assert.deepEqual([err.code, err.param], ['invalid_request', 'after'], path);
      assert.match(err.message, /^after must be a cursor returned as next_cursor \(an id like [a-z]+_…\)\.$/);
    }
    assert.equal((await h.api('/v1/sessions?after=ses_01m86x92bs8mxten2nx4hey4qd')).status, 200, 'an id of the right kind is a cursor');
  });

  it('400s a router or credential cursor that is not a name of the list, like every other list', async () => {
    // Was a 200 with an empty page: these two lists took any string as a position (customer audit 2, item 4).
    const cases: [string, RegExp][] = [
      ['/v1/credentials?after=x', /\(a credential name\)/],
      ['/v1/credentials?after=%00bad', /\(a credential name\)/],
      [`/v1/credentials?after=${'A'.repeat(129)}`, /^after must be a cursor returned as next_cursor\.$/],
      ['/v1/routers?after=%00bad', /\(a router_id\)/],
      ['/v1/routers?after=-x', /\(a router_id\)/],
    ];
    for (const [path, message] of cases) {
      const res = await h.api(path);
      assert.equal(res.status, 400, path);
      const err = await errorOf(res);
      assert.deepEqual([err.code, err.param], ['invalid_request', 'after'], path);
      assert.match(err.message, message, path);
    }
    // A name of the list's shape is a position in name order, whether or not a row has it (as an id is on the others).
    assert.equal((await h.api('/v1/credentials?after=SOME_KEY')).status, 200);
    assert.equal((await h.api('/v1/routers?after=x')).status, 200);
  });

  it('415s a body that is not JSON', async () => {
    const res = await h.api('/v1/credentials/OPENAI_API_KEY', { method: 'PUT', body: 'value=x', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    assert.equal(res.status, 415);
    assert.equal((await errorOf(res)).type, 'unsupported_media_type');
  });

  it('413s a body over the limit, declared or streamed', async () => {
    const big = JSON.stringify({ value: 'x'.repeat(2 * 1024 * 1024) });
    const res = await h.api('/v1/credentials/OPENAI_API_KEY', { method: 'PUT', body: big, headers: { 'Content-Type': 'application/json' } });
    assert.equal(res.status, 413);
    assert.equal((await errorOf(res)).type, 'request_too_large');
    const chunked = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode(big));
        c.close();
      },
    });
    const res2 = await h.api('/v1/credentials/OPENAI_API_KEY', { method: 'PUT', body: chunked, headers: { 'Content-Type': 'application/json' }, duplex: 'half' } as RequestInit);
    assert.equal(res2.status, 413);
    await res2.body?.cancel();
  });

  it('serves Prometheus metrics', async () => {
    // A request of its own to count, so the test does not lean on an earlier one having called /healthz.
    assert.equal((await fetch(`${h.baseUrl}/healthz`)).status, 200);
    const res = await fetch(`${h.baseUrl}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/plain/);
    const text = await res.text();
    assert.match(text, /# TYPE troupe_http_requests_total counter/);
    assert.match(text, /troupe_http_requests_total\{[^}]*route="\/healthz"/);
  });

  it('serves an OpenAPI document built from the request schemas', async () => {
    const res = await fetch(`${h.baseUrl}/v1/openapi.json`);
    assert.equal(res.status, 200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: { required: string[] } }> } }>> };
    assert.equal(doc.openapi, '3.1.0');
    const put = doc.paths['/v1/credentials/{name}'].put;
    assert.deepEqual(put.requestBody!.content['application/json'].schema.required, ['value']);
  });
});
