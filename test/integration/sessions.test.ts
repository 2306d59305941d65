import assert from 'node:assert/strict';
import { ROUTER_PROXY } from '../../src/domain/actors/router-proxy.js';
import { modelCallJobId } from '../../src/domain/actors/session.js';
import { scriptedAgent } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { SseClient } from '../support/sse.js';
import { json, until } from '../support/wait.js';

interface Envelope {
  id: string;
  session_id: string;
  sequence_number: number;
  message_id: string | null;
  type: string;
  source: string;
  actor: { type: string; id: string | null };
  data: Record<string, unknown>;
  created_at: string;
}



describe('sessions and the ledger', () => {
  let h: Harness;
  let agentId: string;
  const text = (t: string) => [{ type: 'text', text: t }];

  before(async () => {
    h = await startHarness({ env: { TROUPE_SESSION_SHARDS: '4' } });
    ({ agentId } = await scriptedAgent(h, [{ text: 'Hello from the script.' }]));
  });
  after(async () => {
    if (process.env.TROUPE_TEST_DUMP_ERRORS) for (const l of h.logs().split('\n')) if (/"level":"(error|warn)"/.test(l)) console.error(l.slice(0, 1500));
    await h?.close();
  });

  async function newSession(body: unknown = {}): Promise<Record<string, unknown>> {
    return json(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: body }), 201);
  }

  async function events(sessionId: string): Promise<Envelope[]> {
    return (await json<{ events: Envelope[] }>(await h.api(`/v1/sessions/${sessionId}/events?limit=100`), 200)).events;
  }

  async function settled(sessionId: string, count: number): Promise<Envelope[]> {
    return until(async () => {
      const s = await json<{ status: string; last_message_status: string }>(await h.api(`/v1/sessions/${sessionId}`), 200);
      if (s.status !== 'idle') return undefined;
      const evs = await events(sessionId);
      return evs.length >= count ? evs : undefined;
    });
  }

  it('creates an idle session and never returns secrets or the provider key', async () => {
    const canary = `canary-${Date.now()}-SECRET`;
    const res = await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: { name: 'first', metadata: { team: 'a' }, secrets: { API_TOKEN: canary }, llm_api_key: `${canary}-llm` } });
    const raw = await res.text();
    assert.equal(res.status, 201);
    assert.ok(!raw.includes(canary));
    const s = JSON.parse(raw);
    assert.equal(s.status, 'idle');
    assert.equal(s.last_message_id, null);
    assert.equal(s.last_message_status, null);
    assert.equal(s.llm_id, 'main');
    assert.equal(s.internet_access, false);
    assert.deepEqual(s.metadata, { team: 'a' });
    const read = await (await h.api(`/v1/sessions/${s.id}`)).text();
    assert.ok(!read.includes(canary));
    const stored = await h.running.core.db.collection('sessions').findOne({ _id: s.id });
    assert.ok(stored && !JSON.stringify(stored).includes(canary), 'sealed at rest');
    assert.ok(!h.logs().includes(canary), 'never logged');
  });

  it('validates session input', async () => {
    for (const [body, param] of [
      [{ secrets: { 'bad-name': 'x' } }, 'secrets'],
      [{ secrets: { GOOD: '' } }, 'secrets.GOOD'],
      [{ metadata: { k: 1 } }, 'metadata.k'],
      [{ llm_id: 'nope' }, 'llm_id'],
    ] as const) {
      const res = await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: body });
      const err = (await json<{ error: { param: string } }>(res, 400)).error;
      assert.equal(err.param, param, JSON.stringify(body));
    }
  });

  it('runs a user message through every transition with exact event shapes', async () => {
    const s = await newSession();
    const res = await json<{ event: Envelope; message: { id: string; status: string }; session: { status: string; last_message_id: string } }>(
      await h.api(`/v1/sessions/${s.id}/events`, { method: 'POST', json: { type: 'user.message', content: text('hi'), metadata: { k: 'v' } } }),
      201,
    );
    assert.equal(res.message.status, 'queued');
    assert.equal(res.event.type, 'user.message');
    assert.equal(res.event.id, `${s.id}:1`);
    assert.equal(res.event.source, 'user');
    assert.deepEqual(res.event.data, { content: text('hi'), metadata: { k: 'v' }, message_id: res.message.id });
    assert.equal(res.session.status, 'running');
    assert.equal(res.session.last_message_id, res.message.id);
    const evs = await settled(s.id as string, 7);
    const mid = res.message.id;
    assert.deepEqual(
      evs.map((e) => [e.sequence_number, e.type, e.data.from ?? null, e.data.to ?? null]),
      [
        [1, 'user.message', null, null],
        [2, 'message.status_changed', null, 'queued'],
        [3, 'session.status_changed', 'idle', 'running'],
        [4, 'message.status_changed', 'queued', 'running'],
        [5, 'assistant.message_completed', null, null],
        [6, 'message.status_changed', 'running', 'completed'],
        [7, 'session.status_changed', 'running', 'idle'],
      ],
    );
    assert.deepEqual(evs[1].data, { message_id: mid, from: null, to: 'queued', attempt: 1 });
    for (const e of evs.slice(1)) {
      assert.equal(e.source, 'platform');
      assert.deepEqual(e.actor, { type: 'system', id: null });
      assert.equal(e.id, `${s.id}:${e.sequence_number}`);
    }
    assert.deepEqual(evs[4].data.parts, [{ type: 'text', text: 'Hello from the script.' }]);
    const msgs = await json<{ messages: { id: string; status: string; output: { parts: unknown[] }; completed_at: string }[] }>(await h.api(`/v1/sessions/${s.id}/messages`), 200);
    assert.equal(msgs.messages.length, 1);
    assert.equal(msgs.messages[0].status, 'completed');
    assert.ok(msgs.messages[0].completed_at);
    const one = await json<{ id: string }>(await h.api(`/v1/sessions/${s.id}/messages/${mid}`), 200);
    assert.equal(one.id, mid);
    const transcript = await (await h.api(`/v1/sessions/${s.id}/transcript?format=text`)).text();
    assert.match(transcript, /user: hi\nassistant: Hello from the script\./);
  });

  it('honours Idempotency-Key: same body replays byte for byte, another body is 422', async () => {
    const s = await newSession();
    const send = (body: unknown) => h.api(`/v1/sessions/${s.id}/events`, { method: 'POST', json: body, headers: { 'Idempotency-Key': 'key-1' } });
    const first = await send({ type: 'user.message', content: text('once') });
    const firstText = await first.text();
    assert.equal(first.status, 201);
    const again = await send({ type: 'user.message', content: text('once') });
    assert.equal(again.status, 201);
    assert.equal(await again.text(), firstText);
    const other = await send({ type: 'user.message', content: text('different') });
    assert.equal((await json<{ error: { code: string } }>(other, 422)).error.code, 'idempotency_key_reused');
    await settled(s.id as string, 7);
    const msgs = await json<{ messages: unknown[] }>(await h.api(`/v1/sessions/${s.id}/messages`), 200);
    assert.equal(msgs.messages.length, 1, 'no second message');
  });

  it('answers 409 to a concurrent request with the same Idempotency-Key while the first is in flight', async () => {
    const s = await newSession();
    const body = { type: 'user.message', content: text('race') };
    const results = await Promise.all([1, 2, 3].map(() => h.api(`/v1/sessions/${s.id}/events`, { method: 'POST', json: body, headers: { 'Idempotency-Key': 'race' } })));
    const statuses = results.map((r) => r.status).sort();
    await Promise.all(results.map((r) => r.text()));
    assert.ok(statuses.includes(201));
    assert.ok(statuses.every((st) => st === 201 || st === 409), String(statuses));
    await settled(s.id as string, 7);
    assert.equal((await json<{ messages: unknown[] }>(await h.api(`/v1/sessions/${s.id}/messages`), 200)).messages.length, 1);
  });

  it('lets a retry take over an Idempotency-Key claim whose request died, past the lease, with no second message', async () => {
    const s = await newSession();
    const body = { type: 'user.message', content: text('orphaned claim') };
    const send = () => h.api(`/v1/sessions/${s.id}/events`, { method: 'POST', json: body, headers: { 'Idempotency-Key': 'orphan' } });
    const first = await json<{ message: { id: string } }>(await send(), 201);
    // As a web process killed after the actor took the message, before it recorded the answer, leaves it.
    const claims = h.running.core.db.collection<{ _id: string; state: string }>('idempotency_keys');
    const claim = { _id: `session:${s.id as string}|orphan` };
    const orphan = async (ageMs: number) => {
      const r = await claims.updateOne(claim, { $set: { state: 'in_flight', response: null, status: null, created_at: new Date(Date.now() - ageMs) } });
      assert.equal(r.matchedCount, 1, 'the claim is where the route keeps it');
    };
    await orphan(5_000);
    assert.equal((await json<{ error: { code: string } }>(await send(), 409)).error.code, 'idempotency_key_in_flight', 'a young claim still holds');
    await orphan(61_000);
    const retried = await json<{ message: { id: string } }>(await send(), 201);
    assert.equal(retried.message.id, first.message.id, 'the session answered the retry with the message it already had');
    assert.equal((await claims.findOne(claim))?.state, 'done');
    await settled(s.id as string, 7);
    assert.equal((await json<{ messages: unknown[] }>(await h.api(`/v1/sessions/${s.id}/messages`), 200)).messages.length, 1);
  });

  it('continues the same session when a retry of POST /v1/agents/{id}/messages takes over a claim whose request died', async () => {
    const key = `one-shot-orphan-${Date.now()}`;
    const body = { type: 'user.message', content: text('orphaned one-shot'), session: { metadata: { probe: key } } };
    const send = () => h.api(`/v1/agents/${agentId}/messages`, { method: 'POST', json: body, headers: { 'Idempotency-Key': key } });
    const first = await json<{ message: { id: string }; session: { id: string } }>(await send(), 201);
    // As a web process killed after the session was created and the actor took the message, before it recorded the answer.
    const claims = h.running.core.db.collection<{ _id: string; scope: string; key: string; resource_id?: string }>('idempotency_keys');
    const recorded = await claims.findOne({ key });
    assert.match(recorded?.scope ?? '', new RegExp(`^agent-messages:.*:${agentId}$`));
    assert.equal(recorded?.resource_id, first.session.id, 'the claim recorded the session it chose');
    const claim = { _id: recorded!._id };
    const r = await claims.updateOne(claim, { $set: { state: 'in_flight', response: null, status: null, created_at: new Date(Date.now() - 61_000) } });
    assert.equal(r.matchedCount, 1, 'the claim is where the route keeps it');
    const retried = await json<{ message: { id: string }; session: { id: string } }>(await send(), 201);
    assert.equal(retried.session.id, first.session.id, 'no second session');
    assert.equal(retried.message.id, first.message.id, 'the session answered the retry with the message it already had');
    await settled(first.session.id, 7);
    assert.equal((await json<{ messages: unknown[] }>(await h.api(`/v1/sessions/${first.session.id}/messages`), 200)).messages.length, 1);
    assert.equal((await json<{ sessions: unknown[] }>(await h.api(`/v1/sessions?metadata.probe=${key}`), 200)).sessions.length, 1);
  });

  it('runs nothing twice when a command is repeated after BullMQ removed its completed jobs (kept an hour)', async () => {
    const s = await newSession();
    const sid = s.id as string;
    const body = { type: 'user.message', content: text('late retry') };
    const send = () => h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: body, headers: { 'Idempotency-Key': 'late' } });
    const first = await json<{ message: { id: string } }>(await send(), 201);
    await settled(sid, 7);
    const calls = h.running.core.plane.dispatcher.queueOf(ROUTER_PROXY);
    const modelJob = modelCallJobId({ message_id: first.message.id, attempt: 1, call_index: 0 });
    assert.ok(await calls.getJob(modelJob), 'the model call ran as its own job');
    // An hour on, as removeOnComplete leaves them: the completed jobs are gone, and their ids dedupe nothing.
    await calls.clean(0, 100_000, 'completed');
    assert.equal(await calls.getJob(modelJob), undefined);

    // Within the key's 24 h the web process answers from its record; the actor is not asked.
    const replayed = await send();
    assert.equal(replayed.status, 201);
    assert.equal(replayed.headers.get('Idempotent-Replayed'), 'true');
    // A retry whose claim was released (its request answered 503 while the actor applied the message) is the
    // same command again: the actor answers from the ledger and re-issues only work the session still waits on.
    const claims = h.running.core.db.collection<{ _id: string }>('idempotency_keys');
    const r = await claims.updateOne({ _id: `session:${sid}|late` }, { $set: { state: 'in_flight', response: null, status: null, created_at: new Date(Date.now() - 61_000) } });
    assert.equal(r.matchedCount, 1, 'the claim is where the route keeps it');
    const retried = await json<{ message: { id: string; status: string } }>(await send(), 201);
    assert.equal(retried.message.id, first.message.id);

    // A message sent after the retry runs to its end behind anything the retry handed off on the session's shard.
    await json(await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: text('after') } }), 201);
    const evs = await settled(sid, 14);
    assert.equal(await calls.getJob(modelJob), undefined, 'the first message\'s model call was not sent again');
    assert.equal(evs.length, 14, 'no event twice');
    assert.equal(evs.filter((e) => e.type === 'user.message').length, 2);
    assert.equal((await json<{ messages: unknown[] }>(await h.api(`/v1/sessions/${sid}/messages`), 200)).messages.length, 2);
  });

  it('gives 50 concurrent messages gapless sequence numbers and runs them FIFO', async function () {
    this.timeout(60_000);
    const s = await newSession();
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => h.api(`/v1/sessions/${s.id}/events`, { method: 'POST', json: { type: 'user.message', content: text(`m${i}`) } }).then((r) => json(r, 201))),
    );
    assert.equal(results.length, 50);
    const evs = await until(async () => {
      const all: Envelope[] = [];
      let after = 0;
      for (;;) {
        const page = await json<{ events: Envelope[]; has_more: boolean; next_cursor: string }>(await h.api(`/v1/sessions/${s.id}/events?limit=100&after=${after}`), 200);
        all.push(...page.events);
        if (!page.has_more) break;
        after = Number(page.next_cursor);
      }
      const done = all.filter((e) => e.type === 'message.status_changed' && e.data.to === 'completed').length;
      return done === 50 && all.at(-1)!.type === 'session.status_changed' ? all : undefined;
    }, 50_000);
    assert.deepEqual(evs.map((e) => e.sequence_number), evs.map((_, i) => i + 1), 'no gap, no duplicate');
    const userOrder = evs.filter((e) => e.type === 'user.message').map((e) => e.message_id);
    const completionOrder = evs.filter((e) => e.type === 'message.status_changed' && e.data.to === 'completed').map((e) => e.message_id);
    assert.deepEqual(completionOrder, userOrder, 'FIFO');
    assert.equal(evs.filter((e) => e.type === 'session.status_changed' && e.data.to === 'idle').length, 1);
  });

  it('streams over SSE and resumes after Last-Event-ID with no gap and no duplicate', async () => {
    const s = await newSession();
    const headers = { Authorization: `Bearer ${h.apiKey}` };
    const first = new SseClient(`${h.baseUrl}/v1/sessions/${s.id}/stream`, headers);
    await first.open();
    assert.equal(first.status, 200);
    await h.api(`/v1/sessions/${s.id}/events`, { method: 'POST', json: { type: 'user.message', content: text('one') } });
    await first.waitFor((r) => r.length >= 7);
    await first.close();
    const cut = first.records[3];
    assert.equal(cut.event, 'message.status_changed');
    const rec = JSON.parse(first.records[0].data) as Envelope;
    assert.equal(rec.type, 'user.message');
    assert.equal(first.records[0].id, rec.id);
    await h.api(`/v1/sessions/${s.id}/events`, { method: 'POST', json: { type: 'user.message', content: text('two') } });
    await settled(s.id as string, 14);
    const resumed = new SseClient(`${h.baseUrl}/v1/sessions/${s.id}/stream`, { ...headers, 'Last-Event-ID': cut.id });
    await resumed.open();
    await resumed.waitFor((r) => r.length >= 10);
    await new Promise((r) => setTimeout(r, 200));
    await resumed.close();
    assert.deepEqual(resumed.records.map((r) => Number(r.id.split(':')[1])), [5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
    assert.ok(resumed.comments.includes('connected'));
  });

  it('keeps one Redis subscription per session however many streams are open', async () => {
    const s = await newSession();
    const hub = h.running.core.plane.hub;
    const before = hub.channelCount;
    const clients = Array.from({ length: 5 }, () => new SseClient(`${h.baseUrl}/v1/sessions/${s.id}/stream`, { Authorization: `Bearer ${h.apiKey}` }));
    await Promise.all(clients.map((c) => c.open()));
    await until(async () => hub.channelCount === before + 1);
    await Promise.all(clients.map((c) => c.close()));
    await until(async () => hub.channelCount === before);
  });

  it('rejects a Last-Event-ID of another session', async () => {
    const s = await newSession();
    const res = await h.api(`/v1/sessions/${s.id}/stream`, { headers: { 'Last-Event-ID': 'ses_other:3' } });
    assert.equal((await json<{ error: { param: string } }>(res, 400)).error.param, 'Last-Event-ID');
  });

  it('rejects a Last-Event-ID past the ledger, and accepts the last event the session has', async () => {
    const s = await newSession();
    const ahead = await h.api(`/v1/sessions/${s.id}/stream`, { headers: { 'Last-Event-ID': `${s.id}:5` } });
    const err = (await json<{ error: { param: string; message: string } }>(ahead, 400)).error;
    assert.equal(err.param, 'Last-Event-ID');
    assert.match(err.message, /past the session's last event/);
    await json(await h.api(`/v1/sessions/${s.id}/messages/sync`, { method: 'POST', json: { parts: text('hi') } }), 200);
    const last = (await json<{ events: Envelope[] }>(await h.api(`/v1/sessions/${s.id}/events?limit=100`), 200)).events.at(-1)!;
    const ctl = new AbortController();
    const ok = await h.api(`/v1/sessions/${s.id}/stream`, { headers: { 'Last-Event-ID': last.id }, signal: ctl.signal });
    assert.equal(ok.status, 200);
    ctl.abort();
  });

  it('waits synchronously for the terminal message', async () => {
    const s = await newSession();
    const m = await json<{ status: string; output: { parts: { text: string }[] }; attempt: number; completed_at: string; session_id: string }>(
      await h.api(`/v1/sessions/${s.id}/messages/sync`, { method: 'POST', json: { parts: text('sync please') } }),
      200,
    );
    assert.equal(m.status, 'completed');
    assert.equal(m.session_id, s.id);
    assert.equal(m.output.parts[0].text, 'Hello from the script.');
    assert.equal(m.attempt, 1);
    assert.ok(m.completed_at);
  });

  it('creates a session and its first message in one request', async () => {
    const res = await json<{ event: Envelope; message: { status: string }; session: { id: string; name: string; status: string } }>(
      await h.api(`/v1/agents/${agentId}/messages`, { method: 'POST', json: { type: 'user.message', content: text('hello'), session: { name: 'one-shot', llm_id: 'alt' } } }),
      201,
    );
    assert.equal(res.message.status, 'queued');
    assert.equal(res.session.name, 'one-shot');
    assert.equal(res.event.type, 'user.message');
    const evs = await settled(res.session.id, 7);
    assert.deepEqual(evs[4].data.parts, [{ type: 'text', text: 'alt says hi' }]);
  });

  it('answers a user message with its message and session as of one moment (customer audit, item 11)', async () => {
    type Reply = { message: { id: string; status: string }; session: { id: string; status: string; last_message_id: string; last_message_status: string } };
    const agree = (r: Reply, route: string) => {
      assert.equal(r.session.last_message_id, r.message.id, route);
      assert.equal(r.session.last_message_status, r.message.status, `${route}: message.status and session.last_message_status describe the same message`);
      assert.equal(r.message.status, 'queued', route);
      assert.equal(r.session.status, 'running', route);
    };
    const first = await json<Reply>(await h.api(`/v1/agents/${agentId}/messages`, { method: 'POST', json: { type: 'user.message', content: text('one') } }), 201);
    agree(first, 'POST /v1/agents/{agent_id}/messages');
    await settled(first.session.id, 7);
    // Idle again: this message starts in the turn that records it.
    const idle = await json<Reply>(await h.api(`/v1/sessions/${first.session.id}/events`, { method: 'POST', json: { type: 'user.message', content: text('two') } }), 201);
    agree(idle, 'POST /v1/sessions/{session_id}/events');
    const s = await newSession();
    const keyed = { method: 'POST', json: { type: 'user.message', content: text('three') }, headers: { 'Idempotency-Key': `k-${Date.now()}` } };
    const fresh = await json<Reply>(await h.api(`/v1/sessions/${s.id}/events`, keyed), 201);
    agree(fresh, 'POST /v1/sessions/{session_id}/events with Idempotency-Key');
    agree(await json<Reply>(await h.api(`/v1/sessions/${s.id}/events`, keyed), 201), 'its replay');
  });

  it('filters sessions by several metadata pairs (AND) and pages', async () => {
    const tag = `t${Date.now()}`;
    await newSession({ metadata: { tag, env: 'prod' } });
    await newSession({ metadata: { tag, env: 'dev' } });
    await newSession({ metadata: { tag, env: 'prod' } });
    const both = await json<{ sessions: { metadata: Record<string, string> }[] }>(await h.api(`/v1/sessions?metadata.tag=${tag}&metadata.env=prod`), 200);
    assert.equal(both.sessions.length, 2);
    assert.ok(both.sessions.every((x) => x.metadata.env === 'prod'));
    const p1 = await json<{ sessions: { id: string }[]; has_more: boolean; next_cursor: string }>(await h.api(`/v1/sessions?metadata.tag=${tag}&limit=2`), 200);
    assert.equal(p1.sessions.length, 2);
    assert.equal(p1.has_more, true);
    const p2 = await json<{ sessions: { id: string }[]; has_more: boolean }>(await h.api(`/v1/sessions?metadata.tag=${tag}&limit=2&after=${p1.next_cursor}`), 200);
    assert.equal(p2.sessions.length, 1);
    assert.equal(p2.has_more, false);
    assert.ok(!p1.sessions.some((x) => x.id === p2.sessions[0].id));
    assert.equal((await h.api('/v1/sessions?limit=1000')).status, 400);
  });

  it('cancels a queued message behind a running one', async () => {
    const { agentId: slowAgent } = await scriptedAgent(h, [{ text: 'a' }]);
    const s = await json<{ id: string }>(await h.api(`/v1/agents/${slowAgent}/sessions`, { method: 'POST' }), 201);
    const sends = await Promise.all(['x', 'y', 'z'].map((t) => h.api(`/v1/sessions/${s.id}/events`, { method: 'POST', json: { type: 'user.message', content: text(t) } }).then((r) => json<{ message: { id: string } }>(r, 201))));
    const last = sends[2].message.id;
    const res = await h.api(`/v1/sessions/${s.id}/messages/${last}/cancel`, { method: 'POST' });
    const body = await res.text();
    if (res.status === 409) {
      assert.match(body, /already completed/);
      return;
    }
    assert.equal(res.status, 200, body);
    assert.equal(JSON.parse(body).message.status, 'cancelled');
    await until(async () => (await json<{ status: string }>(await h.api(`/v1/sessions/${s.id}`), 200)).status === 'idle');
    const m = await json<{ status: string }>(await h.api(`/v1/sessions/${s.id}/messages/${last}`), 200);
    assert.equal(m.status, 'cancelled');
    const again = await h.api(`/v1/sessions/${s.id}/messages/${last}/cancel`, { method: 'POST' });
    assert.ok([200, 409].includes(again.status));
    await again.text();
  });

  it('validates posted events by type', async () => {
    const s = await newSession();
    const bad = await h.api(`/v1/sessions/${s.id}/events`, { method: 'POST', json: { type: 'user.message' } });
    assert.equal((await json<{ error: { param: string } }>(bad, 400)).error.param, 'content');
    const noResult = await h.api(`/v1/sessions/${s.id}/events`, { method: 'POST', json: { type: 'tool.result_submitted', message_id: 'msg_x', tool_call_id: 'c1' } });
    assert.equal((await json<{ error: { param: string } }>(noResult, 400)).error.param, 'result');
    const unknownType = await h.api(`/v1/sessions/${s.id}/events`, { method: 'POST', json: { type: 'assistant.message_completed' } });
    assert.equal(unknownType.status, 400);
    await unknownType.text();
    const notPending = await h.api(`/v1/sessions/${s.id}/events`, { method: 'POST', json: { type: 'tool.result_submitted', message_id: 'msg_x', tool_call_id: 'c1', is_error: true } });
    assert.equal(notPending.status, 404);
    await notPending.text();
  });

  it('404s another org’s session and a deleted agent for new sessions', async () => {
    const s = await newSession();
    const other = await h.running.core.stores.orgs.create(`other-${Date.now()}`);
    const { key } = await h.running.core.stores.apiKeys.create(other._id, 'api');
    const res = await h.api(`/v1/sessions/${s.id}`, { headers: { Authorization: `Bearer ${key}` } });
    assert.equal(res.status, 404);
    await res.text();
    // The web node knows this session's head (it created it), so commands skip reading it: never for another org.
    const commands: [string, unknown][] = [
      [`/v1/sessions/${s.id}/events`, { type: 'user.message', content: [{ type: 'text', text: 'x' }] }],
      [`/v1/sessions/${s.id}/messages/sync`, { parts: [{ type: 'text', text: 'x' }] }],
      [`/v1/sessions/${s.id}/messages/msg_x/cancel`, undefined],
    ];
    for (const [path, body] of commands) {
      const r = await h.api(path, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, ...(body ? { json: body } : {}) });
      assert.equal(r.status, 404, path);
      assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'session_not_found', path);
    }
    const { agentId: doomed } = await scriptedAgent(h, [{ text: 'x' }]);
    await h.running.core.db.collection('agents').updateOne({ _id: doomed as never }, { $set: { deleted_at: new Date() } });
    const created = await h.api(`/v1/agents/${doomed}/sessions`, { method: 'POST' });
    assert.equal(created.status, 404);
    await created.text();
  });
});
