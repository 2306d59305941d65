import type { Priority, Send } from '../actors/address.js';
import { BATCH } from '../actors/batch.js';
import { ROUTER_PROXY } from '../actors/router-proxy.js';
import { TOOL_RUNNER } from '../actors/tool-runner.js';
import { WEBHOOKS, type LifecycleSession } from '../actors/webhook.js';
import { sessionCommand, type Effect } from '../actors/session.js';

/** The session fields a send carries: its address, and what a lifecycle webhook reports. */
type Sender = LifecycleSession & { priority?: Priority };

/**
 * A decision's effects as messages to other actors, addressed for the
 * runtime to hand off. Job ids are deterministic, so re-issuing the effects
 * of a redelivered command runs none of them twice while BullMQ keeps their
 * completed jobs (an hour); a later replay re-issues only what the session
 * still waits on (outstanding.ts, `stillOwed`). `session` is the session
 * as the turn leaves it: a lifecycle webhook carries its fields, so that it
 * need not read a session document the turn may still be writing.
 */
export function effectSends(session: Sender, effects: readonly Effect[]): Send[] {
  const priority = session.priority ?? 'interactive';
  return effects.flatMap((e): Send[] => (e.kind === 'work.abort' ? [] : [sendOf(session, priority, e)]));
}

/**
 * Effects handed off only once the session document is written: the batch
 * actor's terminal webhook counts the children from their session documents,
 * so the last child's settlement must not overtake its own write. Everything
 * else goes out as soon as the ledger and the messages are written.
 */
export function afterCommit(e: Effect): boolean {
  return e.kind === 'batch.child_settled';
}

/** The messages whose work a decision aborts (published on the cancel channel by the runtime). */
export function abortedMessages(effects: readonly Effect[]): string[] {
  return effects.flatMap((e) => (e.kind === 'work.abort' ? [e.message_id] : []));
}

function sendOf(session: Sender, priority: Priority, e: Exclude<Effect, { kind: 'work.abort' }>): Send {
  switch (e.kind) {
    case 'model.call':
      return { to: ROUTER_PROXY, name: e.kind, data: { ...e.call, org_id: session.org_id, version_id: session.version_id, llm_id: session.llm_id, priority }, job_id: e.job_id, priority, ...(e.delay_ms ? { delay_ms: e.delay_ms } : {}) };
    case 'session.command':
      return sessionCommand(session._id, e.command, priority, e.delay_ms);
    case 'tool.run':
    case 'agent.step':
      return { to: TOOL_RUNNER, name: e.kind, data: { ...e.job, org_id: session.org_id, priority }, job_id: e.job_id, priority };
    case 'webhook': {
      const data = e.job.kind === 'session.lifecycle' ? { ...e.job, org_id: session.org_id, session: lifecycleSession(session) } : { ...e.job, org_id: session.org_id };
      return { to: WEBHOOKS, name: e.job.kind, data, job_id: e.job_id, priority };
    }
    case 'batch.child_settled':
      return { to: BATCH, name: 'child.settled', data: { ...e.job, org_id: session.org_id }, job_id: e.job_id, priority };
  }
}

function lifecycleSession(s: Sender): LifecycleSession {
  return { _id: s._id, org_id: s.org_id, batch_id: s.batch_id, agent_id: s.agent_id, version_id: s.version_id, llm_id: s.llm_id, status: s.status, last_message_status: s.last_message_status, metadata: s.metadata };
}
