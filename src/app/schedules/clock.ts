/**
 * Port to what fires schedules: BullMQ job schedulers (src/lib/queues/job-schedulers.ts). `arm` creates or
 * replaces a schedule's job scheduler with its cron and zone; `disarm` removes it (paused, deleted, agent gone).
 */
export interface ScheduleClock {
  arm(schedule: { _id: string; org_id: string; cron: string; timezone: string }): Promise<void>;
  disarm(scheduleId: string): Promise<void>;
  /** The schedulers armed now, with the org their ticks name (null when unreadable), for reconcile-schedules.ts. */
  armed(): Promise<{ id: string; org_id: string | null }[]>;
}
