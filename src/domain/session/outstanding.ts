import { TERMINAL_MESSAGE_STATUSES, type OutputPart } from '../ledger.js';
import { agentModelCall, confirmationDeadline, nextWork, sleepEnd, startLater, toolDeadline, toolRun, type DecideInput } from './decision.js';
import type { Effect } from '../actors/session.js';

/**
 * The effects a session is waiting on, derived from its state alone: the
 * running message's next model call, its custom tool runs, its external tool
 * and confirmation deadlines, or the start of the queue's head. They are built by the same
 * functions as the original turns' effects (decision.ts), so their job ids are
 * the ones those turns used: issuing them again where they still exist is a
 * no-op; where Redis lost them, it is exactly the work that was stranded.
 * Pure, like decide.
 */
export function outstanding(input: DecideInput): Effect[] {
  const { session, messages, agent } = input;
  if (!session.running_message_id) {
    const head = session.queued_message_ids[0];
    return head ? [startLater(head)] : [];
  }
  const m = messages.get(session.running_message_id);
  if (!m || TERMINAL_MESSAGE_STATUSES.includes(m.status)) return [];
  const inFlight = m.agent?.pending ?? [];
  if (m.pending_tool_calls.length === 0 && inFlight.length === 0) return m.status === 'running' ? [nextWork(input, m)] : [];
  const effects: Effect[] = [];
  for (const p of inFlight) {
    if (p.kind === 'model') effects.push(agentModelCall(m, session, { position: p.position, call_index: p.call_index ?? 0, request: JSON.parse(p.request_json ?? '{}') as Record<string, unknown>, attempt: p.attempt }));
    else effects.push(sleepEnd(m, p.position, p.until ? Date.parse(p.until) - agent.now.getTime() : 0));
  }
  for (const c of m.pending_tool_calls) {
    const tool = agent.tools.get(c.name);
    if (c.awaiting_confirmation) {
      // Nothing runs before the client allows it: only the confirmation's deadline is owed.
      const left = c.expires_at ? Date.parse(c.expires_at) - agent.now.getTime() : 0;
      effects.push(confirmationDeadline(m, c.id, left));
    } else if (tool?.kind === 'custom') {
      const part = m.output.parts.find((p): p is Extract<OutputPart, { type: 'tool_call' }> => p.type === 'tool_call' && p.id === c.id);
      effects.push(toolRun(input, m, { id: c.id, name: c.name, arguments: part?.arguments ?? {} }));
    } else if (tool?.kind === 'external') {
      const left = c.expires_at ? Date.parse(c.expires_at) - agent.now.getTime() : 0;
      effects.push(toolDeadline(m, c.id, left));
    }
  }
  return effects;
}

/** The effects `outstanding` can derive from the session's state, keyed by what names the work. */
function owedKey(e: Effect): string | null {
  switch (e.kind) {
    case 'model.call':
    case 'tool.run':
    case 'agent.step':
      return `${e.kind}:${e.job_id}`;
    case 'session.command':
      return `${e.kind}:${e.command.command_id}`;
    default:
      return null;
  }
}

/**
 * Of the effects a replayed turn recorded, those to issue again. A model
 * call, a tool run or a session command goes again only while the session
 * still waits on it (`outstanding`): its job id stops deduplicating once
 * BullMQ removes the completed job (after an hour), and a replay that late
 * must not run a tool or a model call a second time. Webhooks and batch
 * settlements, which the state does not tell, go again: the batch actor
 * counts a child once (its settlement record), and a webhook is
 * at-least-once under a stable event id (its delivery record gets the
 * attempt; docs/decisions.md).
 */
export function stillOwed(recorded: readonly Effect[], input: DecideInput): Effect[] {
  const owed = new Set(outstanding(input).map(owedKey));
  return recorded.filter((e) => {
    const key = owedKey(e);
    return key === null || owed.has(key);
  });
}
