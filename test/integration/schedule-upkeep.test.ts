import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { reap } from '../../src/app/reaper.js';
import { reconcileInTurn } from '../../src/app/schedules/reconcile.js';
import { tickIds } from '../../src/domain/schedule.js';
import { JobSchedulerClock, SCHEDULES_QUEUE } from '../../src/lib/queues/job-schedulers.js';
import { RedisReconcileTurns } from '../../src/lib/schedules/reconcile-turns.js';
import { scriptedAgent } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { startRoleProcess, type RoleProcess } from '../support/role-process.js';
import { troupe } from '../support/troupe-cli.js';
import { json, until } from '../support/wait.js';
import type { ScheduleBody, ScheduleRun } from '../support/wire.js';

const DAY = 24 * 60 * 60 * 1000;

/**
 * What keeps schedules honest over time (issue #33 item 3): job schedulers
 * re-armed from the records at worker start after Redis lost them, ticks that
 * gave up settled as failed, runs reaped after their retention, the tick
 * counter, and `troupe schedules`.
 */
describe('schedule upkeep', function () {
  this.timeout(30_000);
  let h: Harness;
  const children: RoleProcess[] = [];
  let agentId: string;
  let orgId: string;
  const message = { content: [{ type: 'text', text: 'tick' }] };
  const create = (body: unknown, agent = agentId) => h.api(`/v1/agents/${agent}/schedules`, { method: 'POST', json: body });
  const runsOf = async (id: string) => (await json<{ runs: ScheduleRun[] }>(await h.api(`/v1/schedules/${id}/runs?limit=100`), 200)).runs;
  const queue = () => h.running.core.plane.queues.queue(SCHEDULES_QUEUE);
  const armedIds = async () => (await queue().getJobSchedulers(0, -1, true)).map((s) => s.key).sort();
  const tickCount = async (outcome: string) => {
    const metric = await h.running.core.metrics.scheduleTicks.get();
    return metric.values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
  };

  const RECONCILED = 'schedules reconciled with their job schedulers';
  const SKIPPED = 'schedule reconcile skipped: another worker reconciled within the window';
  const WINDOW_MS = 10_000;
  const marker = () => h.running.core.keys.scheduleReconcile();
  const startWorker = async () => {
    const c = await startRoleProcess(['worker'], { ...h.env, LOG_LEVEL: 'info', PORT: '0', TROUPE_SCHEDULE_RECONCILE_WINDOW_MS: String(WINDOW_MS) }, { readyMs: 20_000 });
    children.push(c);
    return c;
  };
  const stop = async (c: RoleProcess) => {
    c.kill('SIGTERM');
    await Promise.race([c.exited, new Promise((r) => setTimeout(r, 3000))]);
    if (c.child.exitCode === null && c.child.signalCode === null) c.kill('SIGKILL');
  };
  /** The worker's reconcile log line: a scan's counts, or its skip. */
  const reconcileLog = (c: RoleProcess) =>
    until(async () => c.lines.map((l) => { try { return JSON.parse(l) as Record<string, unknown>; } catch { return null; } }).find((p) => p?.msg === RECONCILED || p?.msg === SKIPPED), 20_000);

  before(async () => {
    h = await startHarness({ roles: ['web', 'worker'] });
    ({ agentId, orgId } = await scriptedAgent(h, [{ text: 'done' }]));
  });
  after(async () => {
    for (const c of children) await stop(c);
    await h?.close();
  });

  it('re-arms live schedules at worker start after Redis lost its job schedulers, and removes the ones left without a live schedule', async () => {
    const sentBefore = await tickCount('sent');
    const live = await json<ScheduleBody>(await create({ cron: '* * * * * *', message }), 201);
    const paused = await json<ScheduleBody>(await create({ cron: '0 0 1 1 *', message, paused: true }), 201);
    const { agentId: doomed } = await scriptedAgent(h, [{ text: 'done' }]);
    const orphan = await json<ScheduleBody>(await create({ cron: '0 0 1 1 *', message }, doomed), 201);
    await until(async () => (await runsOf(live.id)).some((r) => r.status === 'sent'), 8000);
    assert.ok((await tickCount('sent')) > sentBefore, 'the tick counter counts sent ticks');

    // Redis loses the queue (a flush, or a failover to a replica without it): every job scheduler is gone.
    await queue().obliterate({ force: true });
    await h.running.core.redis.del(marker()); // a flush loses the marker of the last reconcile as well
    assert.deepEqual(await armedIds(), []);
    const wipedAt = Date.now();
    // And schedulers that should not be there: a paused schedule's, a deleted schedule's, and one of an agent
    // deleted by a deletion that died before it reached its schedules.
    const clock = new JobSchedulerClock(h.running.core.plane.queues);
    const far = { org_id: orgId, cron: '0 0 1 1 *', timezone: 'UTC' };
    await clock.arm({ ...far, _id: paused.id });
    await clock.arm({ ...far, _id: 'sch_0000000000gone0000000000' });
    await clock.arm({ ...far, _id: orphan.id });
    await h.running.core.stores.agents.softDelete(orgId, doomed);

    // Two workers start together (a deploy): the records are the truth, and one of them scans them.
    const [a, b] = await Promise.all([startWorker(), startWorker()]);
    const logs = [await reconcileLog(a), await reconcileLog(b)];
    assert.deepEqual(logs.map((l) => l.msg).sort(), [SKIPPED, RECONCILED].sort(), JSON.stringify(logs));
    const reconciled = logs.find((l) => l.msg === RECONCILED)!;
    assert.deepEqual([reconciled.armed, reconciled.disarmed], [1, 3]);
    // Marked done for the window, from the end of the scan.
    const ttl = await h.running.core.redis.pttl(marker());
    assert.ok(ttl > 0 && ttl <= WINDOW_MS, `marker ttl ${ttl}`);
    assert.deepEqual(await armedIds(), [live.id]);
    await until(async () => (await runsOf(live.id)).some((r) => r.status === 'sent' && Date.parse(r.scheduled_for) > wipedAt), 6000);
    // Exactly once still: one run per tick time.
    const times = (await runsOf(live.id)).map((r) => r.scheduled_for);
    assert.equal(new Set(times).size, times.length);
    for (const id of [live.id, paused.id]) assert.equal((await h.api(`/v1/schedules/${id}`, { method: 'DELETE' })).status, 204);
    await Promise.all([stop(a), stop(b)]);
  });

  it('re-arms at a worker start after the window, once the lease of a worker that died mid-scan expires', async () => {
    const s = await json<ScheduleBody>(await create({ cron: '0 0 1 1 *', message }), 201);
    assert.ok((await armedIds()).includes(s.id), 'the API arms what it creates: the scan is only the repair path');
    await queue().removeJobScheduler(s.id); // lost by hand
    const clock = new JobSchedulerClock(h.running.core.plane.queues);
    // What a worker start runs (roles/schedule-ticks.ts), here in this process.
    const core = h.running.core;
    const turns = new RedisReconcileTurns(core.redis, marker(), WINDOW_MS);
    const waits: number[] = [];
    const wait = async (ms: number) => (waits.push(ms), await new Promise((r) => setTimeout(r, ms)), true);
    // The window is over (its done marker expired; removed here). A scan that fails gives its lease back, so the next
    // start scans at once rather than after the lease, and marks nothing done.
    await core.redis.del(marker());
    const broken = { ...clock, arm: async () => { throw new Error('redis away'); }, armed: () => clock.armed(), disarm: (id: string) => clock.disarm(id) };
    await assert.rejects(reconcileInTurn({ schedules: core.stores.schedules, agents: core.stores.agents, clock: broken }, turns, wait), /redis away/);
    assert.equal(await core.redis.get(marker()), null);
    // A worker that took the lease then died mid-scan: the next start waits on its lease, then scans.
    await core.redis.set(marker(), 'lease-of-a-worker-that-died', 'PX', 1500);
    const result = await reconcileInTurn({ schedules: core.stores.schedules, agents: core.stores.agents, clock }, turns, wait);
    assert.ok(waits.length >= 1, 'it waited on the lease');
    assert.ok(result && result.armed >= 1, JSON.stringify(result));
    assert.ok((await armedIds()).includes(s.id), 'the scheduler removed by hand is armed again');
    assert.equal(await core.redis.get(marker()), 'done');
    // And the next start within the window skips.
    assert.equal(await reconcileInTurn({ schedules: core.stores.schedules, agents: core.stores.agents, clock }, turns, wait), null);
    assert.equal((await h.api(`/v1/schedules/${s.id}`, { method: 'DELETE' })).status, 204);
  });

  it('records a tick whose job gave up after its attempts as failed with a reason, not pending', async () => {
    const s = await json<ScheduleBody>(await create({ cron: '0 0 1 1 *', message }), 201);
    // A record the tick cannot read (its session template broken in the store): every attempt throws after the run
    // was recorded pending, which BullMQ retries and then gives up on.
    await h.running.core.db.collection('schedules').updateOne({ _id: s.id as never }, { $set: { session: null } });
    const [errors, gaveUp] = [await tickCount('error'), await tickCount('gave_up')];
    const at = Date.UTC(2031, 0, 1);
    await queue().add('tick', { org_id: orgId, schedule_id: s.id }, { jobId: `repeat:${s.id}:${at}`, attempts: 2, backoff: { type: 'fixed', delay: 50 } });
    const [run] = await until(async () => {
      const runs = await runsOf(s.id);
      return runs.length === 1 && runs[0].status !== 'pending' && runs;
    }, 8000);
    assert.equal(run.status, 'failed');
    assert.equal(run.scheduled_for, new Date(at).toISOString());
    assert.match(run.error ?? '', /failed 2 times .* given up/);
    assert.ok(!/null|storage_binding/.test(run.error ?? ''), 'the internal error text is not shown to the org');
    assert.equal((await tickCount('error')) - errors, 2);
    assert.equal((await tickCount('gave_up')) - gaveUp, 1);
    const metrics = await (await fetch(`${h.baseUrl}/metrics`)).text();
    assert.match(metrics, /troupe_schedule_ticks_total\{[^}]*outcome="gave_up"[^}]*\} [1-9]/);
    assert.equal((await h.api(`/v1/schedules/${s.id}`, { method: 'DELETE' })).status, 204);
  });

  it('reaps runs past retention and settles runs left pending, a bounded number per pass', async () => {
    const s = await json<ScheduleBody>(await create({ cron: '0 0 1 1 *', message, paused: true }), 201);
    const stores = h.running.core.stores;
    const now = Date.now();
    const run = (ageMs: number, status: 'pending' | 'sent') => {
      const at = Math.floor((now - ageMs) / 1000) * 1000;
      const ids = tickIds(s.id, at);
      return stores.schedules.claimRun({ _id: ids.run_id, org_id: orgId, schedule_id: s.id, scheduled_for: new Date(at), session_id: ids.session_id, message_id: ids.message_id, status, error: null, created_at: new Date() });
    };
    for (const age of [40 * DAY, 39 * DAY, 31 * DAY, 29 * DAY, 2 * DAY]) await run(age, 'sent');
    await run(2 * 60 * 60 * 1000, 'pending'); // lost: its tick was due two hours ago
    await run(60 * 1000, 'pending'); // in flight
    // A pass is bounded: the oldest first, no more than asked.
    assert.equal(await stores.schedules.reapRuns(new Date(now - 30 * DAY), 2), 2);
    assert.equal((await runsOf(s.id)).length, 5);
    const r = await reap(stores, now, { scheduleRunRetentionDays: 30 });
    assert.equal(r.schedule_runs, 1);
    assert.equal(r.abandoned_runs, 1);
    const left = await runsOf(s.id);
    assert.deepEqual(left.map((x) => Math.round((now - Date.parse(x.scheduled_for)) / 60_000)), [1, 120, 2 * 24 * 60, 29 * 24 * 60]);
    assert.deepEqual(left.map((x) => x.status), ['pending', 'failed', 'sent', 'sent']);
    assert.match(left[1].error ?? '', /never finished/);
    // The retention is the setting's: a shorter one reaps more.
    assert.equal((await reap(stores, now, { scheduleRunRetentionDays: 1 })).schedule_runs, 2);
    assert.equal((await runsOf(s.id)).length, 2);
    assert.equal((await h.api(`/v1/schedules/${s.id}`, { method: 'DELETE' })).status, 204);
  });

  it('`troupe schedules` creates, lists, shows, pauses, resumes, lists runs and deletes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-schedules-cli-'));
    const env = { TROUPE_BASE_URL: h.baseUrl, TROUPE_API_KEY: h.apiKey, TROUPE_CONFIG: join(dir, 'config.json') };
    const run = async (args: string[], code = 0) => {
      const r = await troupe(['schedules', ...args], env, dir, 15_000);
      assert.equal(r.code, code, `troupe schedules ${args.join(' ')}: ${r.stderr}`);
      return r;
    };
    try {
      const id = (await run(['create', agentId, '--cron', '* * * * * *', '--timezone', 'Europe/Paris', '--name', 'cli', '--message', 'hello', '--metadata', 'via=cli'])).stdout.trim();
      assert.match(id, /^sch_/);
      const listed = await run(['list', agentId]);
      assert.match(listed.stdout, new RegExp(`${id} +cli +\\* \\* \\* \\* \\* \\* +Europe/Paris +active`));
      const shown = JSON.parse((await run(['get', id, '--json'])).stdout) as ScheduleBody & { session: { metadata: Record<string, string> } };
      assert.deepEqual(shown.session.metadata, { via: 'cli' });
      await until(async () => (await runsOf(id)).some((x) => x.status === 'sent'), 8000);
      const runs = await run(['runs', id]);
      assert.match(runs.stdout, /SCHEDULED FOR +STATUS/);
      assert.match(runs.stdout, /sent +ses_/);
      assert.match((await run(['pause', id])).stdout, new RegExp(`${id} paused`));
      assert.equal((await h.api(`/v1/schedules/${id}`).then((r) => r.json()) as ScheduleBody).paused, true);
      assert.match((await run(['resume', id])).stdout, new RegExp(`${id} active`));
      // A refusal is the API's error and exit code 3 (refused), not a stack.
      const bad = await run(['create', agentId, '--cron', '* * *', '--message', 'x'], 3);
      assert.match(bad.stderr, /cron/);
      await run(['delete', id]);
      await json(await h.api(`/v1/schedules/${id}`), 404);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
