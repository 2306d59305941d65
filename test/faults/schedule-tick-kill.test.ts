import assert from 'node:assert/strict';
import { join } from 'node:path';
import { scriptedAgent } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { startRoleProcess, type RoleProcess } from '../support/role-process.js';
import { json, until } from '../support/wait.js';

const ENTRY = join(__dirname, '../support/worker-process.js');
/** A killed worker's tick is taken over once its lock (TROUPE_ACTOR_LOCK_MS, 4 s) lapses and a stall check sees it. */
const TAKEOVER_BOUND_MS = 15_000;

type Run = { scheduled_for: string; session_id: string; message_id: string; status: string };

/**
 * Issue #33 item 5: a worker SIGKILLed in the middle of a schedule tick (its
 * message sent, its run not yet settled) loses nothing and runs nothing twice:
 * another worker takes the tick's job over, finds the session and message the
 * tick's ids fix, and settles the run, with one session and one message per tick.
 */
describe('fault: a worker SIGKILLed mid schedule tick', function () {
  this.timeout(60_000);
  let h: Harness;
  const children: RoleProcess[] = [];

  before(async () => {
    // Web only in-process: ticks run in child workers, one of them killed.
    h = await startHarness({ roles: ['web'] });
  });
  after(async () => {
    for (const c of children) c.kill('SIGKILL');
    await Promise.all(children.map((c) => c.exited));
    await h?.close();
  });

  it(`runs the tick once, on another worker within ${TAKEOVER_BOUND_MS / 1000} s`, async () => {
    const { agentId } = await scriptedAgent(h, [{ text: 'done' }]);
    const doomed = await startRoleProcess(['worker'], { ...h.env, TROUPE_TEST_TICK_HANG: '1' }, { entry: ENTRY });
    children.push(doomed);
    const marker = `k${Date.now()}`;
    const s = await json<{ id: string }>(await h.api(`/v1/agents/${agentId}/schedules`, { method: 'POST', json: { cron: '* * * * * *', message: { content: [{ type: 'text', text: 'tick' }] }, session: { metadata: { marker } } } }), 201);
    const hungLine = await until(async () => doomed.lines.find((l) => l.startsWith('tick-hung ')), 10_000);
    const runId = hungLine.slice('tick-hung '.length).trim();
    const at = new Date(Number(runId.split(':').pop())).toISOString();
    const runsOf = async () => (await json<{ runs: Run[] }>(await h.api(`/v1/schedules/${s.id}/runs?limit=100`), 200)).runs;
    // The message is out, the run still pending: kill -9 there.
    const hung = (await runsOf()).find((r) => r.scheduled_for === at);
    assert.equal(hung?.status, 'pending');
    const sent = await json<{ messages: { id: string }[] }>(await h.api(`/v1/sessions/${hung.session_id}/messages`), 200);
    assert.deepEqual(sent.messages.map((m) => m.id), [hung.message_id], 'the killed worker had sent the message');
    doomed.kill('SIGKILL');
    await doomed.exited;
    const killedAt = Date.now();

    children.push(await startRoleProcess(['worker'], h.env, { entry: ENTRY }));
    await until(async () => (await runsOf()).find((r) => r.scheduled_for === at && r.status === 'sent'), TAKEOVER_BOUND_MS);
    const takeoverMs = Date.now() - killedAt;
    assert.ok(takeoverMs <= TAKEOVER_BOUND_MS);
    await until(async () => (await runsOf()).filter((r) => r.status === 'sent' && r.scheduled_for > at).length >= 2, 10_000);

    // Stop ticking, let the last queued tick settle, then audit every tick.
    await json(await h.api(`/v1/schedules/${s.id}`, { method: 'PATCH', json: { paused: true } }), 200);
    await new Promise((r) => setTimeout(r, 1500));
    const runs = await runsOf();
    assert.equal(new Set(runs.map((r) => r.scheduled_for)).size, runs.length, 'a tick was recorded twice');
    assert.deepEqual(runs.filter((r) => r.status !== 'sent'), [], 'a tick was left unsettled or failed');
    const sessions = await json<{ sessions: { id: string }[] }>(await h.api(`/v1/sessions?metadata.marker=${marker}&limit=100`), 200);
    assert.deepEqual(sessions.sessions.map((x) => x.id).sort(), runs.map((r) => r.session_id).sort(), 'one session per tick, none twice');
    for (const r of runs) {
      const msgs = await json<{ messages: { id: string }[] }>(await h.api(`/v1/sessions/${r.session_id}/messages`), 200);
      assert.deepEqual(msgs.messages.map((m) => m.id), [r.message_id], `tick ${r.scheduled_for} sent its message more than once`);
    }
    // The taken-over tick's message ran once, to its end.
    const taken = runs.find((r) => r.scheduled_for === at)!;
    await until(async () => (await json<{ status: string }>(await h.api(`/v1/sessions/${taken.session_id}/messages/${taken.message_id}`), 200)).status === 'completed', 10_000);
    const events = await json<{ events: { type: string }[] }>(await h.api(`/v1/sessions/${taken.session_id}/events?limit=100`), 200);
    assert.equal(events.events.filter((e) => e.type === 'user.message').length, 1, 'the user message is in the ledger once');
    process.stdout.write(`      tick taken over ${takeoverMs} ms after the kill; ${runs.length} ticks audited\n`);
  });
});
