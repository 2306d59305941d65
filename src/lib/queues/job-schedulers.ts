import type { QueueFactory } from './queues.js';

/** The queue schedule ticks arrive on, one job per tick (src/roles/schedule-ticks.ts runs them). */
export const SCHEDULES_QUEUE = 'schedules';

/** What a tick job carries; the tick time is the job's (`opts.prevMillis`, and the tail of its id). */
export interface ScheduleTickJob {
  org_id: string;
  schedule_id: string;
}

/** A tick is retried on failure (its work is idempotent, run-tick.ts); finished tick jobs are dropped soon, the run record stays. */
export const TICK_ATTEMPTS = 5;

/**
 * Schedules on BullMQ job schedulers: one scheduler per schedule, named by
 * its id, so an upsert replaces the cron in place and every process shares
 * it through Redis. BullMQ adds each tick's job with the id
 * `repeat:<scheduler>:<millis>`, so however many processes run the queue a
 * tick is one job, and the next tick's job is added when this one starts, which
 * survives restarts (the scheduler lives in Redis, not in a process).
 */
export class JobSchedulerClock {
  constructor(private readonly queues: QueueFactory) {}

  async arm(schedule: { _id: string; org_id: string; cron: string; timezone: string }): Promise<void> {
    const data: ScheduleTickJob = { org_id: schedule.org_id, schedule_id: schedule._id };
    await this.queues.queue(SCHEDULES_QUEUE).upsertJobScheduler(
      schedule._id,
      { pattern: schedule.cron, tz: schedule.timezone },
      { name: 'tick', data, opts: { attempts: TICK_ATTEMPTS, backoff: { type: 'exponential', delay: 500 }, removeOnComplete: { count: 1000 }, removeOnFail: { count: 1000 } } },
    );
  }

  async disarm(scheduleId: string): Promise<void> {
    await this.queues.queue(SCHEDULES_QUEUE).removeJobScheduler(scheduleId);
  }

  /** Every job scheduler in Redis with the org its ticks name, read a page at a time. */
  async armed(): Promise<{ id: string; org_id: string | null }[]> {
    const queue = this.queues.queue(SCHEDULES_QUEUE);
    const out: { id: string; org_id: string | null }[] = [];
    for (let start = 0; ; start += ARMED_PAGE) {
      const page = await queue.getJobSchedulers(start, start + ARMED_PAGE - 1, true);
      for (const s of page) out.push({ id: s.key, org_id: (s.template?.data as ScheduleTickJob | undefined)?.org_id ?? null });
      if (page.length < ARMED_PAGE) return out;
    }
  }
}

const ARMED_PAGE = 500;

/** The tick time of a tick job: BullMQ records it as `prevMillis`; older jobs only in the id's tail. */
export function tickTime(job: { id?: string; opts: { prevMillis?: number } }): number | null {
  if (typeof job.opts.prevMillis === 'number') return job.opts.prevMillis;
  const tail = job.id?.split(':').pop();
  return tail && /^\d+$/.test(tail) ? Number(tail) : null;
}
