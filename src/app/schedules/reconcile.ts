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
 * otherwise leave a schedule that reads live and never ticks. Run by one
 * worker start per window (reconcileInTurn below); more may run at once
 * safely, as arming is an upsert (same id, same cron) and the ticks it adds
 * have the tick's own job id.
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

/**
 * Whose turn it is to reconcile (lib/schedules/reconcile-turns.ts): 'ours' while this process holds the lease (it
 * then finishes, marking the window done, or releases after a failure), 'done' when a scan finished within the
 * window, 'held' while another process's lease lives.
 */
export type ReconcileTurn = { state: 'ours'; finish(): Promise<void>; release(): Promise<void> } | { state: 'done' } | { state: 'held'; leftMs: number };

export interface ReconcileTurns {
  take(): Promise<ReconcileTurn>;
}

/**
 * One full reconcile per window however many workers start at once (a deploy of N): the first to take the lease
 * scans, the others wait on it and skip once it marks the window done. A holder that dies stops renewing, so a
 * waiter takes over when its lease expires; a start after the window scans again. Nothing depends on the turn being
 * kept: creating, changing and resuming a schedule arm it themselves (manage-schedules.ts); this is the repair path.
 * `wait` sleeps before the next look and answers false when the process is stopping. Null when skipped.
 */
export async function reconcileInTurn(ports: ReconcilePorts, turns: ReconcileTurns, wait: (ms: number) => Promise<boolean>): Promise<ReconcileResult | null> {
  for (;;) {
    const turn = await turns.take();
    if (turn.state === 'done') return null;
    if (turn.state === 'held') {
      // Looked at again soon rather than at the lease's end: a holder that finishes frees the waiters at once.
      if (!(await wait(Math.min(turn.leftMs, HELD_LOOK_MS)))) return null;
      continue;
    }
    let result: ReconcileResult;
    try {
      result = await reconcileSchedules(ports);
    } catch (err) {
      await turn.release().catch(() => undefined);
      throw err;
    }
    await turn.finish();
    return result;
  }
}

const HELD_LOOK_MS = 1000;
