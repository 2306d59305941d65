import assert from 'node:assert/strict';
import type { ToolDef } from '../../src/domain/agent.js';
import { agentWith } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { SseClient } from '../support/sse.js';
import { json, until } from '../support/wait.js';
import type { LedgerEvent } from '../support/wire.js';

type Ev = LedgerEvent;
type Reply = { message: { id: string; status: string }; session: { id: string } };
type Refusal = { error: { type: string; code: string; message: string } };

/**
 * A soft-deleted agent's sessions (customer audit, item 6): new messages are
 * refused, in the error shape; what they have already taken runs to its end,
 * and everything recorded stays readable.
 */
describe('sessions of a soft-deleted agent', function () {
  this.timeout(60_000);
  let h: Harness;
  let agentId: string;
  const text = (t: string) => [{ type: 'text', text: t }];
  const lookup: ToolDef = { name: 'lookup', kind: 'external', path: 'tools/l.json', timeout_seconds: 600, description: 'x', input_schema: { type: 'object' }, output_schema: null };

  before(async () => {
    h = await startHarness({ env: { TROUPE_SESSION_SHARDS: '2' } });
    ({ agentId } = await agentWith(h, {
      tools: [lookup],
      llm_options: [{ id: 'main', provider: 'scripted', script: 's.json' }],
      // Every message asks for the external tool once, then answers.
      scripts: { main: { turns: [{ tool_calls: [{ name: 'lookup', arguments: {}, id: 'call_1' }] }, { text: 'done' }] } },
    }));
  });
  after(async () => {
    await h?.close();
  });

  const newSession = async () => (await json<{ id: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: {} }), 201)).id;
  const say = (sid: string, t: string, headers: Record<string, string> = {}) => h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: text(t) }, headers });
  const events = async (sid: string) => (await json<{ events: Ev[] }>(await h.api(`/v1/sessions/${sid}/events?limit=100`), 200)).events;
  const status = async (sid: string, mid: string) => (await json<{ status: string }>(await h.api(`/v1/sessions/${sid}/messages/${mid}`), 200)).status;
  const waitingOnTool = (sid: string, mid: string) => until(async () => (await status(sid, mid)) === 'requires_action');
  const submit = (sid: string, mid: string) => h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'tool.result_submitted', message_id: mid, tool_call_id: 'call_1', result: { ok: true } } });
  const refusedAsDeleted = async (res: Response, route: string) => {
    const body = await json<Refusal>(res, 409);
    assert.equal(body.error.code, 'agent_deleted', route);
    assert.equal(body.error.type, 'conflict_error', route);
    assert.match(body.error.message, new RegExp(`${agentId} was deleted`), route);
  };

  it('refuses new messages (409 agent_deleted), lets accepted work finish, and keeps everything readable', async () => {
    // A session that has worked, and this process's worker still holds a copy of.
    const sid = await newSession();
    const key = `k-${Date.now()}`;
    const first = await json<Reply>(await say(sid, 'one', { 'Idempotency-Key': key }), 201);
    await waitingOnTool(sid, first.message.id);
    await json(await submit(sid, first.message.id), 201);
    await until(async () => (await status(sid, first.message.id)) === 'completed');
    // A message waiting on its tool when the agent goes.
    const inFlight = await json<Reply>(await say(sid, 'two'), 201);
    await waitingOnTool(sid, inFlight.message.id);
    // A session no worker has loaded yet (read fresh at its next turn), and one with a message to cancel.
    const untouched = await newSession();
    const other = await newSession();
    const toCancel = await json<Reply>(await say(other, 'three'), 201);
    await waitingOnTool(other, toCancel.message.id);

    await json(await h.api(`/v1/agents/${agentId}`, { method: 'DELETE' }), 200);

    await refusedAsDeleted(await say(sid, 'after'), 'POST /v1/sessions/{session_id}/events');
    await refusedAsDeleted(await say(untouched, 'after'), 'POST /v1/sessions/{session_id}/events, a session read fresh');
    await refusedAsDeleted(await h.api(`/v1/sessions/${sid}/messages/sync`, { method: 'POST', json: { parts: text('after') } }), 'POST /v1/sessions/{session_id}/messages/sync');
    // New sessions: the spec's 404.
    assert.equal((await json<Refusal>(await h.api(`/v1/agents/${agentId}/messages`, { method: 'POST', json: { type: 'user.message', content: text('new') } }), 404)).error.code, 'agent_not_found');
    assert.equal((await json<Refusal>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: {} }), 404)).error.code, 'agent_not_found');
    assert.equal((await json<Refusal>(await h.api('/v1/session-batches', { method: 'POST', json: { items: [{ agent_id: agentId, message: { content: text('b') } }] } }), 404)).error.code, 'agent_not_found');
    // A retry of a message accepted before the delete gets its original answer.
    const replay = await say(sid, 'one', { 'Idempotency-Key': key });
    assert.equal(replay.headers.get('Idempotent-Replayed'), 'true');
    assert.equal((await json<Reply>(replay, 201)).message.id, first.message.id);

    // Work taken before the delete runs to its end: a tool result, a cancel.
    await json(await submit(sid, inFlight.message.id), 201);
    await until(async () => (await status(sid, inFlight.message.id)) === 'completed');
    assert.equal((await json<{ message: { status: string } }>(await h.api(`/v1/sessions/${other}/messages/${toCancel.message.id}/cancel`, { method: 'POST' }), 200)).message.status, 'cancelled');

    // Everything recorded stays readable, and nothing the refusals touched was recorded.
    const session = await until(async () => {
      const s = await json<{ status: string; last_message_id: string; last_message_status: string }>(await h.api(`/v1/sessions/${sid}`), 200);
      return s.status === 'idle' && s;
    });
    assert.deepEqual([session.last_message_id, session.last_message_status], [inFlight.message.id, 'completed']);
    const messages = await json<{ messages: { id: string; status: string }[] }>(await h.api(`/v1/sessions/${sid}/messages`), 200);
    assert.deepEqual(messages.messages.map((m) => [m.id, m.status]), [[first.message.id, 'completed'], [inFlight.message.id, 'completed']]);
    const evs = await events(sid);
    assert.equal(evs.filter((e) => e.type === 'user.message').length, 2);
    assert.deepEqual(await events(untouched), []);
    await json(await h.api(`/v1/sessions/${sid}/transcript`), 200);
    const stream = new SseClient(`${h.baseUrl}/v1/sessions/${sid}/stream`, { Authorization: `Bearer ${h.apiKey}` });
    await stream.open();
    try {
      assert.equal(stream.status, 200);
      await until(async () => stream.records.length >= evs.length);
      assert.deepEqual(stream.records.map((r) => r.id), evs.map((e) => `${sid}:${e.sequence_number}`));
    } finally {
      await stream.close();
    }
  });
});
