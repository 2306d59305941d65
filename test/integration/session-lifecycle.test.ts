import assert from 'node:assert/strict';
import { sessionCommand } from '../../src/domain/actors/session.js';
import { reap } from '../../src/app/reaper.js';
import type { SessionDoc } from '../../src/domain/views/session.js';
import type { ToolDef } from '../../src/domain/agent.js';
import { agentWith, scriptedAgent } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { SseClient } from '../support/sse.js';
import { json, until } from '../support/wait.js';

const text = (t: string) => [{ type: 'text', text: t }];
const waitTool: ToolDef = { name: 'wait_for_me', kind: 'external', path: 'tools/w.json', timeout_seconds: 600, description: 'Never answered.', input_schema: { type: 'object' }, output_schema: null };
const DAY = 24 * 60 * 60 * 1000;

describe('session lifecycle: delete and retention', function () {
  this.timeout(60_000);
  let h: Harness;
  let agentId: string;

  before(async () => {
    h = await startHarness({ roles: ['web', 'worker'], env: { TROUPE_SESSION_SHARDS: '2' } });
    ({ agentId } = await scriptedAgent(h, [{ text: 'Hello back.' }]));
  });
  after(async () => h?.close());

  const newSession = async (agent = agentId) => (await json<{ id: string }>(await h.api(`/v1/agents/${agent}/sessions`, { method: 'POST' }), 201)).id;
  const counts = async (sid: string) => {
    const db = h.running.core.db;
    return {
      sessions: await db.collection('sessions').countDocuments({ _id: sid as never }),
      events: await db.collection('events').countDocuments({ session_id: sid }),
      messages: await db.collection('messages').countDocuments({ session_id: sid }),
      idempotency: await db.collection('idempotency_keys').countDocuments({ scope: `session:${sid}` }),
    };
  };

  it('deletes an idle session with its ledger, messages and idempotency records; every read path is 404', async () => {
    const sid = await newSession();
    const keep = await newSession();
    await json(await h.api(`/v1/sessions/${sid}/messages/sync`, { method: 'POST', json: { parts: text('hi') } }), 200);
    await json(await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: text('again') }, headers: { 'Idempotency-Key': 'k1' } }), 201);
    await until(async () => (await json<{ status: string }>(await h.api(`/v1/sessions/${sid}`), 200)).status === 'idle');
    const before = await counts(sid);
    assert.ok(before.events > 0 && before.messages === 2 && before.idempotency === 1, JSON.stringify(before));

    const stream = new SseClient(`${h.baseUrl}/v1/sessions/${sid}/stream`, { Authorization: `Bearer ${h.apiKey}` });
    await stream.open();
    await stream.waitFor((r) => r.length >= before.events);

    const del = await h.api(`/v1/sessions/${sid}`, { method: 'DELETE' });
    assert.equal(del.status, 204, await del.text());
    await stream.ended();
    assert.deepEqual(await counts(sid), { sessions: 0, events: 0, messages: 0, idempotency: 0 });
    for (const path of [`/v1/sessions/${sid}`, `/v1/sessions/${sid}/messages`, `/v1/sessions/${sid}/events`, `/v1/sessions/${sid}/transcript`]) {
      const err = await json<{ error: { code: string } }>(await h.api(path), 404);
      assert.equal(err.error.code, 'session_not_found', path);
    }
    const resume = await h.api(`/v1/sessions/${sid}/stream`, { headers: { 'Last-Event-ID': `${sid}:2`, Accept: 'text/event-stream' } });
    assert.equal(resume.status, 404);
    await resume.text();
    await json(await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: text('x') } }), 404);
    const list = await json<{ sessions: { id: string }[] }>(await h.api('/v1/sessions?limit=100'), 200);
    assert.ok(!list.sessions.some((s) => s.id === sid));
    assert.ok(list.sessions.some((s) => s.id === keep), 'other sessions stay');
    await json(await h.api(`/v1/sessions/${sid}`, { method: 'DELETE' }), 404);
  });

  it('refuses to delete while a message runs (409) unless force=true, which cancels it first', async () => {
    const { agentId: waiting } = await agentWith(h, {
      tools: [waitTool],
      llm_options: [{ id: 'main', provider: 'scripted', script: 's.json' }],
      scripts: { main: { turns: [{ tool_calls: [{ name: 'wait_for_me', arguments: {} }] }, { text: 'never' }] } },
    });
    const sid = await newSession(waiting);
    await json(await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: text('go') } }), 201);
    await until(async () => (await json<{ last_message_status: string }>(await h.api(`/v1/sessions/${sid}`), 200)).last_message_status === 'requires_action');
    const busy = await json<{ error: { code: string; type: string } }>(await h.api(`/v1/sessions/${sid}`, { method: 'DELETE' }), 409);
    assert.deepEqual([busy.error.type, busy.error.code], ['conflict_error', 'session_busy']);
    await json(await h.api(`/v1/sessions/${sid}?force=maybe`, { method: 'DELETE' }), 400);
    await json(await h.api(`/v1/sessions/${sid}`), 200);
    const forced = await h.api(`/v1/sessions/${sid}?force=true`, { method: 'DELETE' });
    assert.equal(forced.status, 204, await forced.text());
    await json(await h.api(`/v1/sessions/${sid}`), 404);
    assert.deepEqual(await counts(sid), { sessions: 0, events: 0, messages: 0, idempotency: 0 });
  });

  it('hides sessions of another organization from DELETE', async () => {
    const sid = await newSession();
    const other = await h.running.core.stores.orgs.create(`lifecycle-other-${Date.now()}`);
    const { key } = await h.running.core.stores.apiKeys.create(other._id, 'api');
    await json(await h.api(`/v1/sessions/${sid}`, { method: 'DELETE', headers: { Authorization: `Bearer ${key}` } }), 404);
    await json(await h.api(`/v1/sessions/${sid}`), 200);
  });

  it('keeps sessions forever by default; with session_retention_days the reaper deletes idle ones past it', async () => {
    const core = h.running.core;
    const org = await json<{ id: string; session_retention_days: number | null }>(await h.api('/v1/organization'), 200);
    assert.equal(org.session_retention_days, null);
    await json(await h.api('/v1/organization', { method: 'PATCH', json: { session_retention_days: 0 } }), 400);
    await json(await h.api('/v1/organization', { method: 'PATCH', json: {} }), 400);

    const old = await newSession();
    const oldActive = await newSession();
    const fresh = await newSession();
    await json(await h.api(`/v1/sessions/${oldActive}/messages/sync`, { method: 'POST', json: { parts: text('still here') } }), 200);
    const backdate = new Date(Date.now() - 3 * DAY);
    await core.db.collection('sessions').updateMany({ _id: { $in: [old, oldActive] } as never }, { $set: { created_at: backdate } });
    const { dispatcher } = core.plane;
    const hooks = { deleteSession: (s: SessionDoc) => dispatcher.send([sessionCommand(s._id, { kind: 'session.delete', command_id: `retention-${s._id}` })]) };

    assert.equal((await reap(core.stores, Date.now(), hooks)).sessions, 0, 'no retention set: nothing expires');
    const set = await json<{ session_retention_days: number }>(await h.api('/v1/organization', { method: 'PATCH', json: { session_retention_days: 2 } }), 200);
    assert.equal(set.session_retention_days, 2);
    const r = await reap(core.stores, Date.now(), hooks);
    assert.equal(r.sessions, 1, 'only the session idle for longer than 2 days');
    await until(async () => (await h.api(`/v1/sessions/${old}`)).status === 404);
    await json(await h.api(`/v1/sessions/${oldActive}`), 200);
    await json(await h.api(`/v1/sessions/${fresh}`), 200);
    await json(await h.api('/v1/organization', { method: 'PATCH', json: { session_retention_days: null } }), 200);
  });
});
