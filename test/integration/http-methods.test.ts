import Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../support/harness.js';

interface ErrorBody {
  type: string;
  code: string;
  message: string;
}

const ALLOW_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * What HTTP says of a method a path does not take (405 and Allow) and of a missing key (401 and
 * WWW-Authenticate), on the base API and on the routing interface.
 */
describe('HTTP basics: methods a path does not take, and the 401 challenge', function () {
  let h: Harness;
  before(async () => {
    h = await startHarness({ roles: ['web', 'router'] });
  });
  after(async () => {
    await h?.close();
  });

  async function errorOf(res: Response): Promise<ErrorBody> {
    assert.match(res.headers.get('content-type') ?? '', /application\/json/);
    return ((await res.json()) as { error: ErrorBody }).error;
  }

  it('405s DELETE /v1/files and PUT /v1/sessions/{id}/events in the error shape, with Allow', async () => {
    const files = await h.api('/v1/files', { method: 'DELETE' });
    assert.equal(files.status, 405);
    assert.equal(files.headers.get('allow'), 'GET, HEAD, POST');
    const err = await errorOf(files);
    assert.deepEqual([err.type, err.code], ['invalid_request_error', 'method_not_allowed']);
    assert.match(err.message, /\/v1\/files does not take DELETE; it takes GET, HEAD, POST\./);

    const events = await h.api('/v1/sessions/ses_nosuch/events', { method: 'PUT', json: { type: 'user.message' } });
    assert.equal(events.status, 405);
    assert.equal(events.headers.get('allow'), 'GET, HEAD, POST');
    assert.equal((await errorOf(events)).code, 'method_not_allowed');

    // A path the table does not have at all is still a 404.
    const nope = await h.api('/v1/nope', { method: 'DELETE' });
    assert.equal(nope.status, 404);
    assert.equal((await errorOf(nope)).code, 'route_not_found');
  });

  it("answers every documented path's unserved method with a 405 whose Allow is the document's methods (and HEAD with GET)", async () => {
    const doc = (await (await h.api('/v1/openapi.json')).json()) as { paths: Record<string, Record<string, unknown>> };
    const templates = Object.entries(doc.paths).map(([template, ops]) => ({
      pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
      methods: Object.keys(ops).map((m) => m.toUpperCase()).filter((m) => ALLOW_ORDER.includes(m)),
    }));
    let checked = 0;
    for (const template of Object.keys(doc.paths)) {
      const path = template.replace(/\{[^}]+\}/g, 'x');
      // A concrete path can match more than one template (`…/messages/sync` is also `…/messages/{message_id}`).
      const served = new Set(templates.filter((t) => t.pattern.test(path)).flatMap((t) => t.methods));
      if (served.has('GET')) served.add('HEAD');
      const method = ['PATCH', 'DELETE', 'PUT', 'POST'].find((m) => !served.has(m));
      if (!method) continue;
      const res = await h.api(path, { method });
      assert.equal(res.status, 405, `${method} ${path}`);
      assert.equal(res.headers.get('allow'), ALLOW_ORDER.filter((m) => served.has(m)).join(', '), `${method} ${path}`);
      assert.equal((await errorOf(res)).code, 'method_not_allowed', `${method} ${path}`);
      checked++;
    }
    assert.ok(checked > 40, `checked ${checked} paths`);
  });

  it('routes a path before asking for a key: a wrong method without one is a 405, as an unknown path is a 404', async () => {
    const res = await fetch(`${h.baseUrl}/v1/agents`, { method: 'DELETE' });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'GET, HEAD, POST');
  });

  it('405s OPTIONS on a known path with Allow, and HEAD on a path without GET with no body; HEAD on a GET path still answers', async () => {
    const options = await h.api('/v1/agents', { method: 'OPTIONS' });
    assert.equal(options.status, 405);
    assert.equal(options.headers.get('allow'), 'GET, HEAD, POST');
    assert.equal((await errorOf(options)).code, 'method_not_allowed');

    const head = await h.api('/v1/session-batches', { method: 'HEAD' });
    assert.equal(head.status, 405);
    assert.equal(head.headers.get('allow'), 'POST');
    assert.equal(await head.text(), '');

    const headGet = await h.api('/v1/agents', { method: 'HEAD' });
    assert.equal(headGet.status, 200);
    assert.equal(await headGet.text(), '');
  });

  it('names the Bearer scheme on the base API’s 401s, and not on a 403', async () => {
    for (const authorization of [undefined, 'Bearer tr_sk_not_a_key', 'Basic dXNlcjpwYXNz']) {
      const res = await fetch(`${h.baseUrl}/v1/agents`, authorization ? { headers: { Authorization: authorization } } : {});
      assert.equal(res.status, 401, String(authorization));
      assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="troupe"', String(authorization));
      assert.equal((await errorOf(res)).type, 'authentication_error');
    }
    const wrongKind = await h.api('/v1/agents', { headers: { Authorization: `Bearer ${h.routingKey}` } });
    assert.equal(wrongKind.status, 403);
    assert.equal(wrongKind.headers.get('www-authenticate'), null);
  });

  it("names the Bearer scheme on the routing interface's 401s, in each vendor's envelope unchanged", async () => {
    const body = JSON.stringify({ model: 'service/routing', messages: [{ role: 'user', content: 'Hi' }] });
    const chat = await fetch(`${h.routerUrl}/v1/chat/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer nope' }, body });
    assert.equal(chat.status, 401);
    assert.equal(chat.headers.get('www-authenticate'), 'Bearer realm="troupe"');
    assert.deepEqual(await chat.json(), { error: { message: 'The API key is not valid or has been revoked.', type: 'authentication_error', param: null, code: 'invalid_api_key' } });

    // The models list is answered by the router's Koa app rather than the routed-call path: the same header.
    const models = await fetch(`${h.routerUrl}/v1/models`);
    assert.equal(models.status, 401);
    assert.equal(models.headers.get('www-authenticate'), 'Bearer realm="troupe"');

    // Anthropic's SDK still raises its own typed error from the envelope, with the header beside it.
    const client = new Anthropic({ apiKey: null, authToken: null, defaultHeaders: { 'x-api-key': 'tr_rk_not_a_key' }, baseURL: h.routerUrl, maxRetries: 0 });
    const unauth = await client.messages.create({ model: 'service/routing', max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] }).catch((e: unknown) => e);
    assert.ok(unauth instanceof Anthropic.AuthenticationError, String(unauth));
    assert.equal(unauth.status, 401);
    assert.equal(unauth.headers?.get('www-authenticate'), 'Bearer realm="troupe"');
    assert.deepEqual(unauth.error, {
      type: 'error',
      error: { type: 'authentication_error', message: 'The API key is not valid or has been revoked.', code: 'invalid_api_key', details: { error_code: 'invalid_api_key' } },
      request_id: unauth.headers?.get('x-request-id'),
    });
  });
});
