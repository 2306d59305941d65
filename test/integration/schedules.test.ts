import assert from 'node:assert/strict';
import { runTick } from '../../src/app/schedules/run-tick.js';
import { tickPorts } from '../../src/roles/schedule-ticks.js';
import { scriptedAgent } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { startRoleProcess, type RoleProcess } from '../support/role-process.js';
import { json, until } from '../support/wait.js';
import type { ErrorBody, ScheduleBody, ScheduleRun } from '../support/wire.js';

/**
 * Schedules (issue #33 item 3) on BullMQ job schedulers: two worker
 * processes (this one's and a child's) share the ticks of a one-second cron,
 * and each tick opens exactly one session and sends it one message.
 */
describe('schedules', function () {
  this.timeout(30_000);
  let h: Harness;
  let child: RoleProcess | undefined;
  let agentId: string;
  let orgId: string;
  const message = { content: [{ type: 'text', text: 'tick' }] };

  before(async () => {
    h = await startHarness({ roles: ['web', 'worker'] });
    ({ agentId, orgId } = await scriptedAgent(h, [{ text: 'done' }]));
    // A second worker process over the same Redis and database.
    child = await startRoleProcess(['worker'], { ...h.env, LOG_LEVEL: 'info', PORT: '0' }, { readyMs: 20_000 });
  });
  after(async () => {
    child?.kill('SIGTERM');
    if (child) await Promise.race([child.exited, new Promise((r) => setTimeout(r, 3000))]);
    if (child && child.child.exitCode === null && child.child.signalCode === null) child.kill('SIGKILL');
    await h?.close();
  });

  const create = (body: unknown, agent = agentId) => h.api(`/v1/agents/${agent}/schedules`, { method: 'POST', json: body });
  const runsOf = async (id: string, query = 'limit=100') => json<{ runs: ScheduleRun[]; has_more: boolean; next_cursor: string | null }>(await h.api(`/v1/schedules/${id}/runs?${query}`), 200);
  const refused = async (res: Response, param: string) => {
    const body = await json<ErrorBody>(res, 400);
    assert.equal(body.error.type, 'invalid_request_error');
    assert.equal(body.error.param, param, body.error.message);
  };

  it('refuses a bad cron or time zone with a 400 naming the field', async () => {
    await refused(await create({ cron: '* * * *', message }), 'cron');
    await refused(await create({ cron: '* * * * * * *', message }), 'cron');
    await refused(await create({ cron: '61 * * * *', message }), 'cron');
    await refused(await create({ cron: 'every day', message }), 'cron');
    await refused(await create({ cron: '* * * * *', timezone: 'Mars/Olympus_Mons', message }), 'timezone');
    await refused(await create({ cron: '* * * * *', timezone: '+01:00', message }), 'timezone');
    // Stored nothing.
    const list = await json<{ schedules: ScheduleBody[] }>(await h.api(`/v1/agents/${agentId}/schedules`), 200);
    assert.equal(list.schedules.length, 0);
    // A PATCH is checked the same way, and a refused one changes nothing.
    const s = await json<ScheduleBody>(await create({ cron: '0 9 * * 1', message, paused: true }), 201);
    await refused(await h.api(`/v1/schedules/${s.id}`, { method: 'PATCH', json: { cron: '* * *' } }), 'cron');
    await refused(await h.api(`/v1/schedules/${s.id}`, { method: 'PATCH', json: { timezone: 'Nowhere/Else' } }), 'timezone');
    const same = await json<ScheduleBody>(await h.api(`/v1/schedules/${s.id}`), 200);
    assert.equal(same.cron, '0 9 * * 1');
    assert.equal(same.timezone, 'UTC');
    assert.equal((await h.api(`/v1/schedules/${s.id}`, { method: 'DELETE' })).status, 204);
  });

  it('runs each tick of a one-second cron exactly once across two worker processes, pauses, resumes and pages its runs', async () => {
    const marker = `m${Date.now()}`;
    const s = await json<ScheduleBody>(await create({ name: 'every second', cron: '* * * * * *', timezone: 'Europe/Paris', message, session: { metadata: { marker } } }), 201);
    assert.equal(s.agent_id, agentId);
    assert.equal(s.timezone, 'Europe/Paris');
    assert.equal(s.paused, false);
    assert.equal(s.paused_reason, null);
    // Metadata reads back as an object when none was given (the document's shape for it).
    assert.deepEqual((s as unknown as { message: { metadata: unknown } }).message.metadata, {});
    assert.ok(s.next_run_at && Date.parse(s.next_run_at) > Date.now() - 1000);
    const sent = await until(async () => {
      const { runs } = await runsOf(s.id);
      return runs.filter((r) => r.status === 'sent').length >= 4 && runs;
    }, 12_000);
    // Pause: the scheduler is removed; at most a tick already queued runs after it.
    const paused = await json<ScheduleBody>(await h.api(`/v1/schedules/${s.id}`, { method: 'PATCH', json: { paused: true } }), 200);
    assert.equal(paused.paused, true);
    assert.equal(paused.paused_reason, 'user');
    assert.equal(paused.next_run_at, null);
    await new Promise((r) => setTimeout(r, 1500));
    const atPause = (await runsOf(s.id)).runs.length;
    await new Promise((r) => setTimeout(r, 2000));
    assert.equal((await runsOf(s.id)).runs.length, atPause, 'a paused schedule ticked');
    assert.ok(atPause >= sent.length);

    // Exactly once: one run per tick time, ticks a second apart, one session per run holding one message.
    const { runs } = await runsOf(s.id);
    const times = runs.map((r) => Date.parse(r.scheduled_for));
    assert.equal(new Set(times).size, times.length, 'a tick was recorded twice');
    for (let i = 1; i < times.length; i++) assert.ok(times[i - 1] > times[i], 'runs are newest first');
    for (const t of times) assert.equal(t % 1000, 0);
    const sessions = await json<{ sessions: { id: string; metadata: Record<string, string> }[] }>(await h.api(`/v1/sessions?metadata.marker=${marker}&limit=100`), 200);
    assert.deepEqual(sessions.sessions.map((x) => x.id).sort(), runs.map((r) => r.session_id).sort(), 'each tick opened exactly one session');
    for (const r of runs) {
      assert.equal(r.status, 'sent');
      const msgs = await json<{ messages: { id: string }[] }>(await h.api(`/v1/sessions/${r.session_id}/messages`), 200);
      assert.deepEqual(msgs.messages.map((m) => m.id), [r.message_id], 'a tick sent its message more than once');
    }
    // The message ran like any other: the scripted model answered it.
    const first = runs[runs.length - 1];
    await until(async () => (await json<{ status: string }>(await h.api(`/v1/sessions/${first.session_id}/messages/${first.message_id}`), 200)).status === 'completed', 10_000);

    // Paging: newest first, two at a time, every run once.
    const paged: ScheduleRun[] = [];
    let after: string | null = null;
    for (let i = 0; i < 20; i++) {
      const page = await runsOf(s.id, `limit=2${after ? `&after=${after}` : ''}`);
      assert.ok(page.runs.length <= 2);
      paged.push(...page.runs);
      if (!page.has_more) break;
      after = page.next_cursor;
    }
    assert.deepEqual(paged, runs);
    await refused(await h.api(`/v1/schedules/${s.id}/runs?after=soon`), 'after');

    // Resume: ticks again.
    const resumed = await json<ScheduleBody>(await h.api(`/v1/schedules/${s.id}`, { method: 'PATCH', json: { paused: false } }), 200);
    assert.ok(resumed.next_run_at);
    await until(async () => (await runsOf(s.id)).runs.length > atPause, 5000);

    // Delete: gone, and no tick follows.
    assert.equal((await h.api(`/v1/schedules/${s.id}`, { method: 'DELETE' })).status, 204);
    await json(await h.api(`/v1/schedules/${s.id}`), 404);
    const before = (await json<{ sessions: unknown[] }>(await h.api(`/v1/sessions?metadata.marker=${marker}&limit=100`), 200)).sessions.length;
    await new Promise((r) => setTimeout(r, 2000));
    const later = (await json<{ sessions: unknown[] }>(await h.api(`/v1/sessions?metadata.marker=${marker}&limit=100`), 200)).sessions.length;
    assert.ok(later <= before + 1, `a deleted schedule went on ticking: ${before} then ${later} sessions`);
  });

  it('stops the schedules of a deleted agent, whether its deletion or its next tick sees them first', async () => {
    const { agentId: viaApi, orgId } = await scriptedAgent(h, [{ text: 'done' }]);
    const { agentId: viaStore } = await scriptedAgent(h, [{ text: 'done' }]);
    const a = await json<ScheduleBody>(await create({ cron: '* * * * * *', message }, viaApi), 201);
    const b = await json<ScheduleBody>(await create({ cron: '* * * * * *', message }, viaStore), 201);
    await until(async () => (await runsOf(a.id)).runs.some((r) => r.status === 'sent') && (await runsOf(b.id)).runs.some((r) => r.status === 'sent'), 8000);
    // Through the API, which removes the agent's job schedulers at once; and straight in the store, as a deletion that
    // died before it reached them would leave it: the next tick finds the agent gone, records itself skipped and stops.
    const deletedAt = Date.now();
    assert.equal((await h.api(`/v1/agents/${viaApi}`, { method: 'DELETE' })).status, 200);
    await h.running.core.stores.agents.softDelete(orgId, viaStore);
    await until(async () => (await runsOf(b.id)).runs.some((r) => r.status === 'skipped'), 5000);
    await new Promise((r) => setTimeout(r, 1000));
    const settled = [(await runsOf(a.id)).runs.length, (await runsOf(b.id)).runs.length];
    await new Promise((r) => setTimeout(r, 2000));
    assert.deepEqual([(await runsOf(a.id)).runs.length, (await runsOf(b.id)).runs.length], settled, 'ticks went on after the agent was deleted');
    for (const id of [a.id, b.id]) {
      const late = (await runsOf(id)).runs.filter((r) => Date.parse(r.scheduled_for) > deletedAt + 1000);
      assert.ok(late.every((r) => r.status !== 'sent'), `a tick of ${id} after the deletion opened a session`);
    }
    // They read back disarmed, not live: paused, with the reason, and no next tick; and they cannot be resumed.
    const listed = await json<{ schedules: ScheduleBody[] }>(await h.api(`/v1/agents/${viaApi}/schedules`), 200);
    assert.deepEqual(listed.schedules.map((x) => [x.id, x.paused, x.paused_reason, x.next_run_at]), [[a.id, true, 'agent_deleted', null]]);
    const readB = await json<ScheduleBody>(await h.api(`/v1/schedules/${b.id}`), 200);
    assert.deepEqual([readB.paused, readB.paused_reason, readB.next_run_at], [true, 'agent_deleted', null]);
    const resume = await json<ErrorBody>(await h.api(`/v1/schedules/${a.id}`, { method: 'PATCH', json: { paused: false } }), 409);
    assert.equal(resume.error.code, 'agent_deleted');
    // Still another org's to nobody: the deleted agent's list and schedule are 404s to it, like a live one's.
    const stranger = await h.running.core.stores.orgs.create(`stranger-${Date.now()}`);
    const as = { Authorization: `Bearer ${(await h.running.core.stores.apiKeys.create(stranger._id, 'api')).key}` };
    await json(await h.api(`/v1/agents/${viaApi}/schedules`, { headers: as }), 404);
    await json(await h.api(`/v1/schedules/${a.id}`, { headers: as }), 404);
    await json(await h.api(`/v1/schedules/${a.id}`, { method: 'PATCH', json: { paused: true }, headers: as }), 404);
    assert.equal((await h.api(`/v1/schedules/${b.id}`, { method: 'DELETE' })).status, 204);
    await json(await create({ cron: '* * * * *', message }, viaApi), 404);
  });

  it('runs a tick retried after its worker died once: the same session and the same message', async () => {
    const marker = `r${Date.now()}`;
    // Armed, but not due before the test ends.
    const s = await json<ScheduleBody>(await create({ cron: '0 0 1 1 *', message, session: { metadata: { marker } } }), 201);
    const ports = tickPorts(h.running.core);
    const at = Date.UTC(2030, 0, 1);
    assert.equal(await runTick(ports, orgId, s.id, at), 'sent');
    // A worker that sent the message and died before it settled the run: BullMQ runs the tick's job again.
    await h.running.core.stores.schedules.settleRun(orgId, `${s.id}:${at}`, 'pending');
    assert.equal(await runTick(ports, orgId, s.id, at), 'sent');
    // And once it settled, a repeat does nothing at all.
    assert.equal(await runTick(ports, orgId, s.id, at), 'duplicate');
    const { runs } = await runsOf(s.id);
    assert.equal(runs.length, 1);
    const run = runs[0];
    assert.equal(run.scheduled_for, new Date(at).toISOString());
    await until(async () => (await json<{ status: string }>(await h.api(`/v1/sessions/${run.session_id}/messages/${run.message_id}`), 200)).status === 'completed', 10_000);
    const sessions = await json<{ sessions: { id: string }[] }>(await h.api(`/v1/sessions?metadata.marker=${marker}`), 200);
    assert.deepEqual(sessions.sessions.map((x) => x.id), [run.session_id], 'the retried tick opened a second session');
    const msgs = await json<{ messages: { id: string }[] }>(await h.api(`/v1/sessions/${run.session_id}/messages`), 200);
    assert.deepEqual(msgs.messages.map((m) => m.id), [run.message_id], 'the retried tick sent its message twice');
    assert.equal((await h.api(`/v1/schedules/${s.id}`, { method: 'DELETE' })).status, 204);
  });

  it('keeps an org’s schedules from every other org', async () => {
    const s = await json<ScheduleBody>(await create({ cron: '0 0 1 1 *', message, paused: true }), 201);
    const other = await h.running.core.stores.orgs.create(`other-${Date.now()}`);
    const { key } = await h.running.core.stores.apiKeys.create(other._id, 'api');
    const as = { Authorization: `Bearer ${key}` };
    await json(await h.api(`/v1/schedules/${s.id}`, { headers: as }), 404);
    await json(await h.api(`/v1/schedules/${s.id}/runs`, { headers: as }), 404);
    await json(await h.api(`/v1/schedules/${s.id}`, { method: 'PATCH', json: { paused: false }, headers: as }), 404);
    await json(await h.api(`/v1/schedules/${s.id}`, { method: 'DELETE', headers: as }), 404);
    await json(await h.api(`/v1/agents/${agentId}/schedules`, { headers: as }), 404);
    await json(await h.api(`/v1/agents/${agentId}/schedules`, { method: 'POST', json: { cron: '* * * * *', message }, headers: as }), 404);
    // Nor park a reference to another org's file or storage binding in one of its own.
    const { agentId: theirs } = await scriptedAgent(h, [{ text: 'done' }], { orgName: other.name });
    const file = await json<{ id: string }>(await h.api('/v1/files', { method: 'POST', body: (() => { const f = new FormData(); f.append('file', new Blob(['x']), 'x.txt'); return f; })() }), 201);
    const fileMessage = { content: [{ type: 'text', text: 'see' }, { type: 'file', file_id: file.id }] };
    await json(await h.api(`/v1/agents/${theirs}/schedules`, { method: 'POST', json: { cron: '0 0 1 1 *', message: fileMessage }, headers: as }), 404);
    const mine = await json<ScheduleBody>(await h.api(`/v1/agents/${theirs}/schedules`, { method: 'POST', json: { cron: '0 0 1 1 *', message, paused: true }, headers: as }), 201);
    await json(await h.api(`/v1/schedules/${mine.id}`, { method: 'PATCH', json: { message: fileMessage }, headers: as }), 404);
    const binding = await json<{ id: string }>(await h.api('/v1/storage-bindings', { method: 'POST', json: { name: `b${Date.now()}` } }), 201);
    await json(await h.api(`/v1/agents/${theirs}/schedules`, { method: 'POST', json: { cron: '0 0 1 1 *', message, session: { storage_binding_id: binding.id } }, headers: as }), 404);
    const still = await json<ScheduleBody>(await h.api(`/v1/schedules/${s.id}`), 200);
    assert.equal(still.paused, true);
  });
});
