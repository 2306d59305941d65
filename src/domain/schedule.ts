import { createHash } from 'node:crypto';
import type { ContentBlock } from './ledger.js';

/** The session a tick opens: the session-creation fields of POST /v1/agents/{id}/sessions, kept as given. */
export interface SessionTemplate {
  name?: string | null;
  storage_binding_id?: string | null;
  metadata?: Record<string, string>;
  internet_access?: boolean;
  llm_id?: string;
}

export interface ScheduleMessage {
  content: ContentBlock[];
  metadata?: Record<string, string> | null;
}

/** A schedule as stored (collection `schedules`), org-scoped like every record. */
export interface ScheduleDoc {
  _id: string;
  org_id: string;
  agent_id: string;
  name: string | null;
  cron: string;
  timezone: string;
  message: ScheduleMessage;
  session: SessionTemplate;
  paused: boolean;
  created_at: Date;
  updated_at: Date;
}

export type ScheduleRunStatus = 'pending' | 'sent' | 'failed' | 'skipped';

/** One tick of a schedule (collection `schedule_runs`); `_id` is the tick's, so a tick is recorded once. */
export interface ScheduleRunDoc {
  _id: string;
  org_id: string;
  schedule_id: string;
  scheduled_for: Date;
  session_id: string;
  message_id: string;
  status: ScheduleRunStatus;
  error: string | null;
  created_at: Date;
}

export interface ScheduleView {
  id: string;
  agent_id: string;
  name: string | null;
  cron: string;
  timezone: string;
  paused: boolean;
  /** Why it does not tick: `user` (paused through the API), `agent_deleted` (its agent was deleted; it stays so); null when live. */
  paused_reason: PausedReason | null;
  next_run_at: string | null;
  created_at: string;
  message: ScheduleMessage;
  session: SessionTemplate;
}

export type PausedReason = 'user' | 'agent_deleted';

/**
 * A schedule as the API shows it. A deleted agent's schedule reads paused, with the reason, whatever its own
 * flag says: its agent's state is read with it rather than written into it, so a deletion that died before it
 * reached the schedules reads the same.
 */
export function scheduleView(s: ScheduleDoc, nextRunAt: Date | null, agentDeleted = false): ScheduleView {
  const reason: PausedReason | null = agentDeleted ? 'agent_deleted' : s.paused ? 'user' : null;
  return {
    id: s._id,
    agent_id: s.agent_id,
    name: s.name,
    cron: s.cron,
    timezone: s.timezone,
    paused: reason !== null,
    paused_reason: reason,
    next_run_at: reason || !nextRunAt ? null : nextRunAt.toISOString(),
    created_at: s.created_at.toISOString(),
    message: { content: s.message.content, metadata: s.message.metadata ?? {} },
    session: s.session,
  };
}

export function scheduleRunView(r: ScheduleRunDoc): { scheduled_for: string; session_id: string; message_id: string; status: ScheduleRunStatus; error: string | null } {
  return { scheduled_for: r.scheduled_for.toISOString(), session_id: r.session_id, message_id: r.message_id, status: r.status, error: r.error };
}

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';

/**
 * A ulid-shaped id fixed by its seed: the tick time as its time part (so tick sessions sort by when they were
 * due) and a digest of the seed as its random part. Every process that runs the same tick builds the same ids,
 * which is what makes a tick's session and message one, however many workers or retries reach it.
 */
function seededId(prefix: string, millis: number, seed: string): string {
  let time = '';
  let t = millis;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const digest = createHash('sha256').update(seed).digest();
  let rand = '';
  for (let i = 0; i < 16; i++) rand += CROCKFORD[digest[i] % 32];
  return `${prefix}_${time}${rand}`;
}

/** The ids one tick of a schedule uses: its run record, the session it opens and the message it sends. */
export function tickIds(scheduleId: string, scheduledFor: number): { run_id: string; session_id: string; message_id: string; idempotency_key: string } {
  return {
    run_id: `${scheduleId}:${scheduledFor}`,
    session_id: seededId('ses', scheduledFor, `schedule-session:${scheduleId}:${scheduledFor}`),
    message_id: seededId('msg', scheduledFor, `schedule-message:${scheduleId}:${scheduledFor}`),
    idempotency_key: `schedule:${scheduleId}:${scheduledFor}`,
  };
}
