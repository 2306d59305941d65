import type { Logger } from '../lib/log/logger.js';
import type { SessionDoc } from '../domain/views/session.js';
import type { Stores } from '../store/stores.js';

/** Expired reservations are kept this long past `expires_at`, so an upload that started just in time can finish. */
const SNAPSHOT_GRACE_MS = 60 * 60 * 1000;
const SNAPSHOTS_PER_RUN = 500;
/** Sessions examined per org and run; each run goes on where the last stopped, so a backlog drains over successive runs. */
export const SESSIONS_PER_RUN = 500;
const DAY_MS = 24 * 60 * 60 * 1000;
/** How long the webhook delivery log keeps finished deliveries. */
export const DELIVERY_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/** Schedule runs deleted (past retention) and settled (left pending) per run of the reaper, each; the rest wait for the next. */
export const SCHEDULE_RUNS_PER_RUN = 5000;
/** A run still pending this long after its tick was due lost its job (it stalled past BullMQ's limit): failed. */
export const PENDING_RUN_GIVE_UP_MS = 60 * 60 * 1000;
/** Default of TROUPE_SCHEDULE_RUN_RETENTION_DAYS. */
export const SCHEDULE_RUN_RETENTION_DAYS = 30;

export interface ReapResult {
  idempotency_keys: number;
  snapshots: number;
  deliveries: number;
  sessions: number;
  schedule_runs: number;
  abandoned_runs: number;
}

export interface ReapHooks {
  /** Deletes an expired session through its actor, so no turn of it runs meanwhile (the worker role wires it). */
  deleteSession?(session: SessionDoc): Promise<void>;
  /**
   * Per org, the last session id a run examined: the next run goes on after
   * it, and starts over once it reached the end. Kept by the caller across
   * runs (process-local: each worker walks on its own).
   */
  retentionAfter?: Map<string, string>;
  /** How long schedule runs are kept after their tick (TROUPE_SCHEDULE_RUN_RETENTION_DAYS); the default when absent. */
  scheduleRunRetentionDays?: number;
}

/**
 * Idle sessions of orgs with `session_retention_days` whose last activity
 * (their last ledger event, else their creation) is older than that. Only
 * sessions created before the cutoff can qualify, which bounds the scan. A
 * run examines up to SESSIONS_PER_RUN of them from where the last run
 * stopped: always starting from the oldest, a run met the same old sessions
 * that are still in use every time, and never reached any after them.
 */
async function expiredSessions(stores: Stores, now: number, deleteSession: NonNullable<ReapHooks['deleteSession']>, cursors: Map<string, string>): Promise<number> {
  let n = 0;
  for (const org of await stores.orgs.withRetention()) {
    const cutoff = new Date(now - org.session_retention_days! * DAY_MS);
    const page = await stores.sessions.idleCreatedBefore(org._id, cutoff, SESSIONS_PER_RUN, cursors.get(org._id) ?? null);
    if (page.length < SESSIONS_PER_RUN) cursors.delete(org._id);
    else cursors.set(org._id, page.at(-1)!._id);
    for (const s of page) {
      const last = s.last_sequence > 0 ? await stores.ledger.get(s._id, s.last_sequence) : null;
      if ((last?.created_at ?? s.created_at) >= cutoff) continue;
      await deleteSession(s);
      n++;
    }
  }
  return n;
}

/**
 * Periodic clean-up in place of TTL indexes, which FerretDB lacks: expired
 * Idempotency-Keys, snapshot reservations never finalized (record and any
 * uploaded bytes), old finished webhook deliveries, sessions past their
 * org's retention, schedule runs past retention and runs left pending. Every step is
 * idempotent, so any number of workers may run it.
 */
export async function reap(stores: Stores, now = Date.now(), hooks: ReapHooks = {}): Promise<ReapResult> {
  const idempotency_keys = await stores.idempotency.reap(now);
  let snapshots = 0;
  for (const s of await stores.snapshots.expiredReservations(new Date(now - SNAPSHOT_GRACE_MS), SNAPSHOTS_PER_RUN)) {
    if ((await stores.snapshots.deleteUnattached(s.org_id, s._id)) !== 'deleted') continue;
    await stores.blobs.delete('snapshots', s._id);
    snapshots++;
  }
  const deliveries = await stores.webhookDeliveries.reapFinished(new Date(now - DELIVERY_RETENTION_MS));
  const sessions = hooks.deleteSession ? await expiredSessions(stores, now, hooks.deleteSession, hooks.retentionAfter ?? new Map()) : 0;
  const schedule_runs = await stores.schedules.reapRuns(new Date(now - (hooks.scheduleRunRetentionDays ?? SCHEDULE_RUN_RETENTION_DAYS) * DAY_MS), SCHEDULE_RUNS_PER_RUN);
  const abandoned_runs = await stores.schedules.abandonRuns(
    new Date(now - PENDING_RUN_GIVE_UP_MS),
    SCHEDULE_RUNS_PER_RUN,
    'the tick never finished (its worker was lost more times than the queue retries) and was given up; the next tick runs as scheduled',
  );
  return { idempotency_keys, snapshots, deliveries, sessions, schedule_runs, abandoned_runs };
}

export function logReap(log: Logger, r: ReapResult): void {
  if (r.idempotency_keys + r.snapshots + r.deliveries + r.sessions + r.schedule_runs + r.abandoned_runs > 0) log.info({ reaped: r }, 'reaper');
}
