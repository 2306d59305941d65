import { runTick, type TickPorts } from '../app/schedules/run-tick.js';
import { once } from '../lib/lifecycle/shutdown.js';
import { JobSchedulerClock, SCHEDULES_QUEUE, tickTime, type ScheduleTickJob } from '../lib/queues/job-schedulers.js';
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
 * runs one; BullMQ hands each tick's job to one of them.
 */
export function startScheduleTicks(core: Core): void {
  const ports = tickPorts(core);
  const worker = core.plane.queues.worker<ScheduleTickJob, string>(
    SCHEDULES_QUEUE,
    async (job) => {
      const at = tickTime(job);
      if (at === null) throw new Error(`schedule tick job ${job.id} has no tick time`);
      const outcome = await runTick(ports, job.data.org_id, job.data.schedule_id, at);
      core.log.debug({ schedule_id: job.data.schedule_id, scheduled_for: new Date(at).toISOString(), outcome }, 'schedule tick');
      return outcome;
    },
    { concurrency: TICK_CONCURRENCY },
  );
  worker.on('error', (err) => core.log.warn({ err: err.message }, 'schedule tick worker error'));
  worker.on('failed', (job, err) => core.log.warn({ schedule_id: job?.data.schedule_id, err: err.message }, 'schedule tick failed'));
  core.shutdown.add(once('schedule-ticks', () => worker.close()));
}
