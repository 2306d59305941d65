import assert from 'node:assert/strict';
import { scriptedAgent } from '../support/agent-fixture.js';
import { createAgentFrom, minimalAgent } from '../support/archives.js';
import { startHarness, type Harness } from '../support/harness.js';
import { SseClient } from '../support/sse.js';
import { json, until } from '../support/wait.js';

type ErrorBody = { error: { type: string; code: string; param?: string } };

/**
 * The spec walked as a client integrating Troupe would use it, over real HTTP: what that walk found the rest of
 * the suite had not pinned down.
 */
describe('spec walk: the base API as a client developer uses it', () => {
  let h: Harness;
  let agentId: string;
  const text = (t: string) => [{ type: 'text', text: t }];

  before(async () => {
    h = await startHarness({ env: { TROUPE_SESSION_SHARDS: '4' } });
    ({ agentId } = await scriptedAgent(h, [{ text: 'Hello from the script.' }]));
  });
  after(async () => {
    await h?.close();
  });

  async function newSession(): Promise<string> {
    return (await json<{ id: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST' }), 201)).id;
  }

  /** An array nested `depth` levels deep, as JSON text. */
  const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    h.api(path, { method: 'POST', body, headers: { 'Content-Type': 'application/json', ...headers } });

  it('answers a body nested past 100 levels 400 json_too_deep, not 500, and takes one of exactly 100', async () => {
    const sid = await newSession();
    const toolResult = (result: string) => `{"type":"tool.result_submitted","message_id":"msg_x","tool_call_id":"call_1","result":${result}}`;
    // 20 KB: JSON.parse takes it, JSON.stringify overflows the stack on it (the Idempotency-Key hash, the actor's job).
    for (const headers of [{}, { 'Idempotency-Key': 'deep' }] as Record<string, string>[]) {
      const err = (await json<ErrorBody>(await post(`/v1/sessions/${sid}/events`, toolResult(nested(10_000)), headers), 400)).error;
      assert.deepEqual([err.type, err.code], ['invalid_request_error', 'json_too_deep'], JSON.stringify(headers));
    }
    assert.equal((await json<ErrorBody>(await post(`/v1/sessions/${sid}/events`, toolResult(nested(100)), {}), 400)).error.code, 'json_too_deep', 'the body is 101 levels deep');
    // 100 levels: the body, then the result's 99. It gets as far as the session, which has no such message.
    assert.equal((await json<ErrorBody>(await post(`/v1/sessions/${sid}/events`, toolResult(nested(99)), {}), 404)).error.code, 'message_not_found');
    const batch = `{"items":[{"agent_id":"${agentId}","message":{"content":[{"type":"text","text":"hi"}]}},{"x":${nested(10_000)}}]}`;
    assert.equal((await json<ErrorBody>(await post('/v1/session-batches', batch), 400)).error.code, 'json_too_deep');
  });

  it('refuses an archive JSON file nested past 100 levels with a 400 naming the file, and publishes one of exactly 100', async () => {
    // The script file: root, turns, turn, tool_calls, call, arguments, then `x` nested `depth - 6` levels.
    const withScript = (depth: number) => {
      const { manifest, entries } = minimalAgent();
      const script = `{"turns":[{"tool_calls":[{"name":"get_weather","arguments":{"city":"Oslo","x":${nested(depth - 6)}}}]},{"text":"It is mild."}]}`;
      return createAgentFrom(h, manifest, entries.map((e) => (e.name === 'script.json' ? { ...e, content: script } : e)));
    };
    const refused = (await json<ErrorBody & { error: { message: string } }>(await withScript(10_000), 400)).error;
    assert.deepEqual([refused.code, refused.message], ['invalid_script', 'script.json nests arrays and objects more than 100 levels deep.']);
    assert.equal((await json<ErrorBody>(await withScript(101), 400)).error.code, 'invalid_script');
    await json(await withScript(100), 201);
  });

  it('replays an Idempotency-Key whose body comes back with its members in another order', async () => {
    const sid = await newSession();
    const first = await post(`/v1/sessions/${sid}/events`, '{"type":"user.message","content":[{"type":"text","text":"hi"}],"metadata":{"a":"1","b":"2"}}', { 'Idempotency-Key': 'reordered' });
    const firstText = await first.text();
    assert.equal(first.status, 201, firstText);
    // The same request as a JSON store that sorts members (Postgres jsonb, say) hands it back for a retry.
    const again = await post(`/v1/sessions/${sid}/events`, '{"content":[{"text":"hi","type":"text"}],"metadata":{"b":"2","a":"1"},"type":"user.message"}', { 'Idempotency-Key': 'reordered' });
    assert.equal(again.status, 201);
    assert.equal(again.headers.get('Idempotent-Replayed'), 'true');
    assert.equal(await again.text(), firstText);
    const other = await post(`/v1/sessions/${sid}/events`, '{"type":"user.message","content":[{"type":"text","text":"hi"}],"metadata":{"a":"1","b":"3"}}', { 'Idempotency-Key': 'reordered' });
    assert.equal((await json<ErrorBody>(other, 422)).error.code, 'idempotency_key_reused');
    await until(async () => (await json<{ status: string }>(await h.api(`/v1/sessions/${sid}`), 200)).status === 'idle');
    assert.equal((await json<{ messages: unknown[] }>(await h.api(`/v1/sessions/${sid}/messages`), 200)).messages.length, 1, 'one message');

    const key = `batch-${Date.now()}`;
    const created = await json<{ batch_id: string }>(await post('/v1/session-batches', `{"idempotency_key":"${key}","items":[{"agent_id":"${agentId}","metadata":{"a":"1","b":"2"},"message":{"content":[{"type":"text","text":"x"}]}}]}`), 201);
    const replayed = await json<{ batch_id: string }>(await post('/v1/session-batches', `{"items":[{"message":{"content":[{"text":"x","type":"text"}]},"metadata":{"b":"2","a":"1"},"agent_id":"${agentId}"}],"idempotency_key":"${key}"}`), 201);
    assert.equal(replayed.batch_id, created.batch_id);
  });

  it('returns the original batch for its idempotency_key after the agent was deleted', async () => {
    const { agentId: doomed } = await scriptedAgent(h, [{ text: 'x' }]);
    const body = JSON.stringify({ idempotency_key: `gone-${Date.now()}`, items: [{ agent_id: doomed, message: { content: text('x') } }] });
    const firstRes = await post('/v1/session-batches', body);
    const firstText = await firstRes.text();
    assert.equal(firstRes.status, 201, firstText);
    await json(await h.api(`/v1/agents/${doomed}`, { method: 'DELETE' }), 200);
    // The client's answer was lost; its retry must still learn the batch id, as an Idempotency-Key retry does.
    const retry = await post('/v1/session-batches', body);
    assert.equal(retry.status, 201);
    assert.equal(await retry.text(), firstText);
    // A new batch for the deleted agent is refused as before.
    const fresh = await post('/v1/session-batches', JSON.stringify({ items: [{ agent_id: doomed, message: { content: text('x') } }] }));
    assert.equal((await json<ErrorBody>(fresh, 404)).error.code, 'agent_not_found');
  });

  it('resumes the stream after last_event_id given as a query parameter, and names that parameter when it is wrong', async () => {
    const sid = await newSession();
    await json(await h.api(`/v1/sessions/${sid}/messages/sync`, { method: 'POST', json: { parts: text('hi') } }), 200);
    const auth = { Authorization: `Bearer ${h.apiKey}` };
    const resumed = new SseClient(`${h.baseUrl}/v1/sessions/${sid}/stream?last_event_id=${sid}:3`, auth);
    await resumed.open();
    assert.equal(resumed.status, 200);
    await resumed.waitFor((r) => r.length >= 4);
    await resumed.close();
    assert.deepEqual(resumed.records.map((r) => r.id), [4, 5, 6, 7].map((n) => `${sid}:${n}`));
    // The header wins over the parameter.
    const both = new SseClient(`${h.baseUrl}/v1/sessions/${sid}/stream?last_event_id=1`, { ...auth, 'Last-Event-ID': `${sid}:6` });
    await both.open();
    await both.waitFor((r) => r.length >= 1);
    await both.close();
    assert.equal(both.records[0].id, `${sid}:7`);
    const wrong = await h.api(`/v1/sessions/${sid}/stream?last_event_id=ses_other:3`);
    assert.equal((await json<ErrorBody>(wrong, 400)).error.param, 'last_event_id');
    const wrongHeader = await h.api(`/v1/sessions/${sid}/stream`, { headers: { 'Last-Event-ID': 'ses_other:3' } });
    assert.equal((await json<ErrorBody>(wrongHeader, 400)).error.param, 'Last-Event-ID');
  });
});
