import { failTick, runTick, type TickPorts } from '../app/schedules/run-tick.js';
import { reconcileInTurn } from '../app/schedules/reconcile.js';
import { closeWorkers, RunningTurns } from '../../actors/runtime/worker-close.js';
import { once } from '../lib/lifecycle/shutdown.js';
import { RedisReconcileTurns } from '../lib/schedules/reconcile-turns.js';
import { JobSchedulerClock, SCHEDULES_QUEUE, TICK_ATTEMPTS, tickTime, type ScheduleTickJob } from '../lib/queues/job-schedulers.js';
import type { Core } from './core.js';

/** Ticks one worker process runs at once: each only writes a run record and a session and enqueues a command. */
const TICK_CONCURRENCY = 8;

/** What runTick needs, from this process's core. */
export function tickPorts(core: Core): TickPorts {
  const s = core.stores;
  return { schedules: s.schedules, agents: s.agents, sessions: s.sessions, files: s.files, storageBindings: s.storageBindings, box: core.box, outbox: core.plane.dispatcher, gate: core.limits.sessions, clock: new JobSchedulerClock(core.plane.queues) };
}

/**
 * Runs schedule ticks: a BullMQ worker on the schedules queue, whose jobs the
 * job schedulers add (lib/queues/job-schedulers.ts). Every worker process
 * runs one; BullMQ hands each tick's job to one of them. At start, the job
 * schedulers are made to match the schedule records (app/schedules/reconcile.ts),
 * so ticks resume after Redis lost them: by one start per window, however many
 * workers start at once (TROUPE_SCHEDULE_RECONCILE_WINDOW_MS).
 */
export function startScheduleTicks(core: Core): void {
  const ports = tickPorts(core);
  const ticks = core.metrics.scheduleTicks;
  const running = new RunningTurns();
  const worker = core.plane.queues.worker<ScheduleTickJob, string>(
    SCHEDULES_QUEUE,
    (job) => running.run(async () => {
      const at = tickTime(job);
      if (at === null) throw new Error(`schedule tick job ${job.id} has no tick time`);
      try {
        const outcome = await runTick(ports, job.data.org_id, job.data.schedule_id, at);
        ticks.inc({ outcome });
        core.log.debug({ schedule_id: job.data.schedule_id, scheduled_for: new Date(at).toISOString(), outcome }, 'schedule tick');
        return outcome;
      } catch (err) {
        ticks.inc({ outcome: 'error' });
        throw err;
      }
    }),
    {
      concurrency: TICK_CONCURRENCY,
      // The actors' short lock, not BullMQ's 30 s: a tick whose worker died is taken over within seconds (the
      // retry is idempotent, run-tick.ts), not a minute late. Stalled past this many times, BullMQ fails it
      // silently; the reaper then settles its run (app/reaper.ts).
      lockDuration: core.config.actorLockMs,
      stalledInterval: Math.max(500, Math.min(core.config.actorLockMs / 2, 30_000)),
      maxStalledCount: 3,
    },
  );
  worker.on('error', (err) => core.log.warn({ err: err.message }, 'schedule tick worker error'));
  worker.on('failed', (job, err) => {
    const attempts = job?.opts.attempts ?? TICK_ATTEMPTS;
    const at = job ? tickTime(job) : null;
    const gaveUp = !!job && at !== null && job.attemptsMade >= attempts;
    core.log.warn({ schedule_id: job?.data.schedule_id, attempts_made: job?.attemptsMade, gave_up: gaveUp, err: err.message }, 'schedule tick failed');
    if (!gaveUp) return;
    ticks.inc({ outcome: 'gave_up' });
    // A run that stays pending here (this write failed too) is settled by the reaper (app/reaper.ts).
    failTick(ports.schedules, job.data.org_id, job.data.schedule_id, at, attempts).catch((e: Error) => core.log.warn({ schedule_id: job.data.schedule_id, err: e.message }, 'could not record a given-up schedule tick'));
  });
  // As the actors close theirs: a plain close waits for ever on a Redis that does not answer.
  core.shutdown.add(once('schedule-ticks', async () => {
    if (!(await closeWorkers([worker], running, core.plane.queues.producer))) core.log.warn('redis unreachable: stopped waiting for the schedule tick worker to close (no tick was running)');
  }));
  // Not awaited: the worker serves ticks meanwhile, and a failure only delays what the next start repairs.
  const stopping = new AbortController();
  core.shutdown.add(once('schedule-reconcile', async () => stopping.abort()));
  const turns = new RedisReconcileTurns(core.redis, core.keys.scheduleReconcile(), core.config.scheduleReconcileWindowMs);
  reconcileInTurn({ schedules: core.stores.schedules, agents: core.stores.agents, clock: ports.clock }, turns, (ms) => pause(ms, stopping.signal)).then(
    (r) => {
      if (r) core.log.info({ armed: r.armed, disarmed: r.disarmed }, 'schedules reconciled with their job schedulers');
      else if (!stopping.signal.aborted) core.log.info({ window_ms: core.config.scheduleReconcileWindowMs }, 'schedule reconcile skipped: another worker reconciled within the window');
    },
    (err: Error) => core.log.warn({ err: err.message }, 'schedule reconcile failed; the next worker start tries again'),
  );
}

/** Sleeps `ms` (plus a little jitter, so waiters do not look at once); false, at once, when the process stops. */
function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', stop);
      resolve(true);
    }, ms + Math.floor(Math.random() * 200));
    const stop = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', stop, { once: true });
  });
}
