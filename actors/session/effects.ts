import type { Send } from '../runtime/actor.js';
import { BATCH } from '../batch/messages.js';
import { ROUTER_PROXY } from '../router-proxy/messages.js';
import { TOOL_RUNNER } from '../tool-runner/messages.js';
import { WEBHOOKS } from '../webhook/messages.js';
import type { SessionDoc } from '../../src/store/sessions.js';
import { sessionCommand, type Effect } from './messages.js';

/**
 * A decision's effects as messages to other actors, addressed for the
 * runtime to hand off. Job ids are deterministic, so re-issuing the effects
 * of a redelivered command runs none of them twice.
 */
export function effectSends(session: Pick<SessionDoc, '_id' | 'org_id' | 'version_id' | 'llm_id' | 'priority'>, effects: readonly Effect[]): Send[] {
  const priority = session.priority ?? 'interactive';
  return effects.flatMap((e): Send[] => (e.kind === 'work.abort' ? [] : [sendOf(session, priority, e)]));
}

/** The messages whose work a decision aborts (published on the cancel channel by the runtime). */
export function abortedMessages(effects: readonly Effect[]): string[] {
  return effects.flatMap((e) => (e.kind === 'work.abort' ? [e.message_id] : []));
}

function sendOf(session: Pick<SessionDoc, '_id' | 'org_id' | 'version_id' | 'llm_id' | 'priority'>, priority: NonNullable<SessionDoc['priority']>, e: Exclude<Effect, { kind: 'work.abort' }>): Send {
  switch (e.kind) {
    case 'model.call':
      return { to: ROUTER_PROXY, name: e.kind, data: { ...e.call, org_id: session.org_id, version_id: session.version_id, llm_id: session.llm_id, priority }, job_id: e.job_id, priority, ...(e.delay_ms ? { delay_ms: e.delay_ms } : {}) };
    case 'session.command':
      return sessionCommand(session._id, e.command, priority, e.delay_ms);
    case 'tool.run':
      return { to: TOOL_RUNNER, name: e.kind, data: { ...e.job, org_id: session.org_id, priority }, job_id: e.job_id, priority };
    case 'webhook':
      return { to: WEBHOOKS, name: e.job.kind, data: { ...e.job, org_id: session.org_id }, job_id: e.job_id, priority };
    case 'batch.child_settled':
      return { to: BATCH, name: 'child.settled', data: { ...e.job, org_id: session.org_id }, job_id: e.job_id, priority };
  }
}
