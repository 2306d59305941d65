import { ConflictError, NotFoundError } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import type { ScheduleDoc, ScheduleMessage, SessionTemplate } from '../../domain/schedule.js';
import { checkCron, checkTimezone } from '../../lib/schedules/cron.js';
import type { ScheduleStore, ScheduleChange } from '../../store/schedules.js';
import type { ScheduleClock } from './clock.js';

export interface ScheduleInput {
  name?: string | null;
  cron: string;
  timezone?: string;
  message: ScheduleMessage;
  session?: SessionTemplate;
  paused?: boolean;
}

export interface SchedulePorts {
  schedules: ScheduleStore;
  /** The org's agent: live, soft-deleted, or null when it has none of that id. */
  agentState(orgId: string, agentId: string): Promise<'live' | 'deleted' | null>;
  /** The message's references (404 file_not_found) and the template's binding (404 storage_binding_not_found), as a tick will check them. */
  checkRefs(orgId: string, message: ScheduleMessage | undefined, session: SessionTemplate | undefined): Promise<void>;
  clock: ScheduleClock;
  minIntervalMs: number;
}

/**
 * Creates a schedule: the zone known and the cron valid and no faster than
 * the minimum interval (400 naming the field), the agent live and the files
 * and binding named the org's (404), so that a tenant cannot park a reference
 * to another org's records in a schedule.
 * Stored first, then armed: a crash between leaves a stored schedule that
 * fires nothing until it is patched, never a job scheduler without a record
 * (a tick for an unknown schedule removes its scheduler, run-tick.ts).
 */
export async function createSchedule(ports: SchedulePorts, orgId: string, agentId: string, input: ScheduleInput): Promise<ScheduleDoc> {
  const timezone = input.timezone ?? 'UTC';
  checkTimezone(timezone);
  checkCron(input.cron, timezone, ports.minIntervalMs);
  if ((await ports.agentState(orgId, agentId)) !== 'live') throw new NotFoundError('agent', agentId);
  await ports.checkRefs(orgId, input.message, input.session);
  const now = new Date();
  const doc: ScheduleDoc = {
    _id: newId('schedule'),
    org_id: orgId,
    agent_id: agentId,
    name: input.name ?? null,
    cron: input.cron.trim(),
    timezone,
    message: { content: input.message.content, metadata: input.message.metadata ?? null },
    session: input.session ?? {},
    paused: input.paused ?? false,
    created_at: now,
    updated_at: now,
  };
  await ports.schedules.insert(doc);
  if (!doc.paused) await ports.clock.arm(doc);
  return doc;
}

export async function scheduleOr404(schedules: ScheduleStore, orgId: string, id: string): Promise<ScheduleDoc> {
  const doc = await schedules.get(orgId, id);
  if (!doc) throw new NotFoundError('schedule', id);
  return doc;
}

/**
 * Changes `paused`, `cron`, `timezone` or `message`; the job scheduler follows (re-armed with the new cron, or
 * removed while paused). A deleted agent's schedule is not changed (409 agent_deleted, as its sessions answer a
 * message): resumed, it would only record skipped ticks.
 */
export async function updateSchedule(ports: SchedulePorts, orgId: string, id: string, change: ScheduleChange): Promise<ScheduleDoc> {
  const current = await scheduleOr404(ports.schedules, orgId, id);
  if ((await ports.agentState(orgId, current.agent_id)) !== 'live') throw new ConflictError(`agent ${current.agent_id} was deleted; its schedules cannot be changed (delete them instead)`, 'agent_deleted');
  const timezone = change.timezone ?? current.timezone;
  if (change.timezone !== undefined) checkTimezone(timezone);
  if (change.cron !== undefined || change.timezone !== undefined) checkCron(change.cron ?? current.cron, timezone, ports.minIntervalMs);
  if (change.message) await ports.checkRefs(orgId, change.message, undefined);
  const clean: ScheduleChange = { ...change };
  if (clean.cron !== undefined) clean.cron = clean.cron.trim();
  if (clean.message) clean.message = { content: clean.message.content, metadata: clean.message.metadata ?? null };
  const updated = await ports.schedules.update(orgId, id, clean);
  if (!updated) throw new NotFoundError('schedule', id);
  if (updated.paused) await ports.clock.disarm(id);
  else await ports.clock.arm(updated);
  return updated;
}

/** Disarms first, so no tick starts for a schedule about to be gone; a tick already running finds no record and stops. */
export async function deleteSchedule(ports: SchedulePorts, orgId: string, id: string): Promise<void> {
  await scheduleOr404(ports.schedules, orgId, id);
  await ports.clock.disarm(id);
  if (!(await ports.schedules.remove(orgId, id))) throw new NotFoundError('schedule', id);
}
