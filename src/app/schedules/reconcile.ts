import type { ScheduleDoc } from '../../domain/schedule.js';
import type { AgentStore } from '../../store/agents.js';
import type { ScheduleStore } from '../../store/schedules.js';
import type { ScheduleClock } from './clock.js';

export interface ReconcilePorts {
  schedules: ScheduleStore;
  agents: Pick<AgentStore, 'get'>;
  clock: ScheduleClock;
}

export interface ReconcileResult {
  armed: number;
  disarmed: number;
}

const PAGE = 200;

/**
 * Makes Redis's job schedulers match the schedule records, which are the
 * truth: a Redis that was wiped or failed over without its data, or a
 * scheduler lost to a crash between a record's write and its arm, would
 * otherwise leave a schedule that reads live and never ticks. Run at each
 * worker start; any number may run at once, as arming is an upsert (same
 * id, same cron) and the ticks it adds have the tick's own job id.
 *
 * Arms every schedule that is not paused and whose agent is live, then
 * removes every scheduler left without one. A scheduler not seen in the scan
 * is read again before it is removed, so one armed meanwhile by a create or
 * a resume stays; one that races the other way (paused after the scan, then
 * armed here) is disarmed by its next tick (run-tick.ts).
 */
export async function reconcileSchedules(ports: ReconcilePorts): Promise<ReconcileResult> {
  const live = new Set<string>();
  const agents = new Map<string, boolean>();
  const agentLive = async (s: ScheduleDoc) => {
    const key = `${s.org_id}/${s.agent_id}`;
    let ok = agents.get(key);
    if (ok === undefined) {
      const agent = await ports.agents.get(s.org_id, s.agent_id);
      ok = !!agent && !agent.deleted_at;
      agents.set(key, ok);
    }
    return ok;
  };
  let armed = 0;
  let after: string | null = null;
  for (;;) {
    const page = await ports.schedules.listAll(PAGE, after);
    for (const s of page) {
      if (s.paused || !(await agentLive(s))) continue;
      await ports.clock.arm(s);
      live.add(s._id);
      armed++;
    }
    if (page.length < PAGE) break;
    after = page[page.length - 1]._id;
  }
  let disarmed = 0;
  for (const { id, org_id } of await ports.clock.armed()) {
    if (live.has(id)) continue;
    const now = org_id ? await ports.schedules.get(org_id, id) : null;
    if (now && !now.paused && (await agentLive(now))) continue;
    await ports.clock.disarm(id);
    disarmed++;
  }
  return { armed, disarmed };
}
