import { sessionCommand } from '../../domain/actors/session.js';
import type { Outbox } from '../../domain/actors/address.js';
import { NotFoundError, TroupeError } from '../../domain/errors.js';
import { tickIds, type ScheduleRunStatus } from '../../domain/schedule.js';
import type { SecretBox } from '../../lib/crypto/secret-box.js';
import type { RunningSessionGate } from '../../lib/limits/running-sessions.js';
import type { AgentStore } from '../../store/agents.js';
import { isDuplicateKey } from '../../store/duplicate-key.js';
import type { FileStore } from '../../store/files.js';
import type { ScheduleStore } from '../../store/schedules.js';
import type { SessionStore } from '../../store/sessions.js';
import type { StorageBindingStore } from '../../store/storage-bindings.js';
import type { SessionDoc } from '../../domain/views/session.js';
import { buildSession, versionFor } from '../sessions/create-session.js';
import { sendUserMessage, type MessageTarget } from '../sessions/send-user-message.js';
import type { ScheduleClock } from './clock.js';

export interface TickPorts {
  schedules: ScheduleStore;
  agents: AgentStore;
  sessions: SessionStore;
  files: FileStore;
  storageBindings: StorageBindingStore;
  box: SecretBox;
  outbox: Outbox;
  gate: Pick<RunningSessionGate, 'admit' | 'admitMessage'> | undefined;
  clock: ScheduleClock;
}

/**
 * What a tick did: a run recorded with this status, or none (`gone`: the schedule was deleted; `paused`;
 * `duplicate`: the tick had already been run to its end, by another worker or an attempt before this one).
 */
export type TickOutcome = ScheduleRunStatus | 'gone' | 'paused' | 'duplicate';

/** Stores the tick's session, or finds the one an earlier attempt of this tick stored. */
async function storeOnce(sessions: SessionStore, doc: SessionDoc): Promise<SessionDoc> {
  try {
    await sessions.insert(doc);
    return doc;
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    const earlier = await sessions.get(doc.org_id, doc._id);
    if (!earlier) throw err;
    return earlier;
  }
}

/**
 * Runs one tick of a schedule, due at `scheduledFor` (ms): opens a session
 * from the template and sends the message through the one user-message
 * intake. BullMQ gives a tick one job (its id is the scheduler's and the
 * time), so one worker runs it; if that worker dies, the job is retried, and
 * this is then a no-op where it already acted: the run record, the session
 * and the message all have ids fixed by the tick (domain/schedule.ts
 * tickIds), and the message's command id by its idempotency key.
 *
 * A refusal (a domain error: no active version, the running-session cap, a
 * binding gone) is recorded as a failed run and not retried, as a client's
 * request would be answered once; anything else throws so BullMQ retries.
 */
export async function runTick(ports: TickPorts, orgId: string, scheduleId: string, scheduledFor: number): Promise<TickOutcome> {
  const schedule = await ports.schedules.get(orgId, scheduleId);
  if (!schedule) {
    // Deleted, or a scheduler left behind by a crash between a delete's disarm and remove: stop it.
    await ports.clock.disarm(scheduleId);
    return 'gone';
  }
  if (schedule.paused) {
    // A tick queued before a pause took effect, or a scheduler armed by a reconcile that read the schedule before
    // it was paused: removed, then armed again if a resume landed in between (the record is the truth).
    await ports.clock.disarm(scheduleId);
    const now = await ports.schedules.get(orgId, scheduleId);
    if (now && !now.paused) await ports.clock.arm(now);
    return 'paused';
  }
  const ids = tickIds(scheduleId, scheduledFor);
  const { run, created } = await ports.schedules.claimRun({
    _id: ids.run_id,
    org_id: orgId,
    schedule_id: scheduleId,
    scheduled_for: new Date(scheduledFor),
    session_id: ids.session_id,
    message_id: ids.message_id,
    status: 'pending',
    error: null,
    created_at: new Date(),
  });
  if (!created && run.status !== 'pending') return 'duplicate';
  const agent = await ports.agents.get(orgId, schedule.agent_id);
  if (!agent || agent.deleted_at) {
    // A deleted agent's schedules stop: this tick is recorded as skipped and no other follows.
    await ports.schedules.settleRun(orgId, run._id, 'skipped', `agent ${schedule.agent_id} was deleted`);
    await ports.clock.disarm(scheduleId);
    return 'skipped';
  }
  try {
    const earlier = await ports.sessions.get(orgId, ids.session_id);
    let target: MessageTarget;
    if (earlier) {
      target = { kind: 'new', create: async () => earlier };
    } else {
      const template = schedule.session;
      const bindingId = template.storage_binding_id;
      if (bindingId && !(await ports.storageBindings.live(orgId, bindingId))) throw new NotFoundError('storage_binding', bindingId);
      const version = await versionFor(ports.agents, orgId, schedule.agent_id);
      const doc = buildSession(ports.box, orgId, version, template, { priority: 'interactive' }, ids.session_id);
      target = { kind: 'new', create: () => storeOnce(ports.sessions, doc) };
    }
    const asker = { ask: async (session: { _id: string }, command: Parameters<typeof sessionCommand>[1]) => ports.outbox.send([sessionCommand(session._id, command, 'interactive')]) };
    await sendUserMessage({ files: ports.files, sessions: ports.sessions, gate: ports.gate, asker }, orgId, target, { content: schedule.message.content, metadata: schedule.message.metadata, param: 'message.content' }, ids.idempotency_key, ids.message_id);
  } catch (err) {
    if (!(err instanceof TroupeError)) throw err;
    await ports.schedules.settleRun(orgId, run._id, 'failed', err.message);
    return 'failed';
  }
  await ports.schedules.settleRun(orgId, run._id, 'sent');
  return 'sent';
}

/**
 * Settles a tick whose job BullMQ gave up on (its attempts spent): the run
 * reads `failed` with a reason instead of `pending` for ever. The cause is
 * logged, not stored: it is an internal error whose text is not the org's to read.
 */
export async function failTick(schedules: ScheduleStore, orgId: string, scheduleId: string, scheduledFor: number, attempts: number): Promise<void> {
  const ids = tickIds(scheduleId, scheduledFor);
  await schedules.failRun({
    _id: ids.run_id,
    org_id: orgId,
    schedule_id: scheduleId,
    scheduled_for: new Date(scheduledFor),
    session_id: ids.session_id,
    message_id: ids.message_id,
    status: 'failed',
    error: `the tick failed ${attempts} times on an internal error and was given up; the next tick runs as scheduled`,
    created_at: new Date(),
  });
}
