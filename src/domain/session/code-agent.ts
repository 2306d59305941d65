import type { MessageState, NewEvent } from '../ledger.js';
import type { Effect, SessionCommand } from '../actors/session.js';
import { agentModelCall, agentStep, messageStatus, NOTHING, platform, sleepEnd, type Decision, type DecideInput } from './decision.js';
import { dispatchTools, finish, retryPlan } from './loop.js';
import type { StepCall, StepEmit } from './code-step.js';

/**
 * A code agent's turn, decided (docs/code-agents.md). Its run function runs in steps: each step replays it against
 * the message's journal and reports the ctx calls it made past it; those are journaled here and dispatched through
 * the same effects as the built-in loop's (model calls to the router-proxy, custom tools to the tool-runner, external
 * tools to the client, sleeps as delayed commands). Once every call of a step has its result, the next step runs.
 * Pure, like decide.
 */

/** The longest `ctx.sleep`: a delayed job, which BullMQ keeps as long as asked, but a turn should not outlive its session. */
export const MAX_SLEEP_MS = 7 * 24 * 3600 * 1000;

/** Whether the message waits on nothing: then its next step may run. */
function idle(m: MessageState): boolean {
  return m.pending_tool_calls.length === 0 && !m.agent?.pending.length;
}

function progress(m: MessageState, emits: StepEmit[]): NewEvent[] {
  return emits.map((e) => platform('agent.progress', m.id, { message_id: m.id, position: e.position, text: e.text }));
}

type StepCmd = Extract<SessionCommand, { kind: 'agent.stepped' }>;

export function agentStepped(input: DecideInput, cmd: StepCmd): Decision {
  const m = input.messages.get(cmd.message_id);
  // A step of a journal that has moved on (a redelivered job, a cancel, a sibling step) changes nothing.
  if (!m || m.status !== 'running' || m.attempt !== cmd.attempt || (m.agent?.positions ?? 0) !== cmd.at || !idle(m)) return NOTHING;
  const out = cmd.outcome;
  const events = progress(m, out.emits);
  if (out.kind === 'failed') {
    const done = finish(input, m, 'failed', { error: out.error });
    return { events: [...events, ...done.events], effects: done.effects, reply: { event_index: events.length, message_id: m.id } };
  }
  if (out.kind === 'done') {
    const parts = [{ type: 'text' as const, text: out.answer }];
    events.push(platform('assistant.message_completed', m.id, { message_id: m.id, call_index: m.agent?.model_calls ?? 0, parts, stop_reason: 'end_turn', usage: null, final: true }));
    const done = finish(input, m, 'completed');
    return { events: [...events, ...done.events], effects: done.effects, reply: { event_index: events.length - 1, message_id: m.id } };
  }
  return suspend(input, m, events, out.calls, cmd.at + out.emits.length + out.calls.length);
}

/** Journals and dispatches a step's calls; a step whose calls all ended at once (unknown tools) is followed by the next. */
function suspend(input: DecideInput, m: MessageState, events: NewEvent[], calls: StepCall[], positions: number): Decision {
  const effects: Effect[] = [];
  let modelCalls = m.agent?.model_calls ?? 0;
  let waiting = 0;
  let external = 0;
  for (const c of calls) {
    const base = { message_id: m.id, position: c.position, kind: c.kind, name: c.name, arguments: c.arguments };
    if (c.kind === 'tool') {
      const id = `ctx_${c.position}`;
      events.push(platform('agent.call_started', m.id, { ...base, tool_call_id: id }));
      const tools = dispatchTools(input, m, [{ type: 'tool_call', id, name: c.name, arguments: c.arguments }]);
      events.push(...tools.events);
      effects.push(...tools.effects);
      external += tools.waiting;
      if (input.agent.tools.has(c.name)) waiting++;
    } else if (c.kind === 'model') {
      events.push(platform('agent.call_started', m.id, base));
      effects.push(agentModelCall(m, input.session, { position: c.position, call_index: modelCalls++, request: c.arguments }));
      waiting++;
    } else {
      const ms = Math.min(MAX_SLEEP_MS, Math.max(0, Number(c.arguments.ms) || 0));
      const until = new Date(input.agent.now.getTime() + ms).toISOString();
      events.push(platform('agent.call_started', m.id, { ...base, until }));
      effects.push(sleepEnd(m, c.position, ms));
      waiting++;
    }
  }
  if (external > 0) events.push(messageStatus(m, 'requires_action'));
  if (waiting === 0) effects.push(agentStep({ ...m, agent: { positions, model_calls: modelCalls, pending: [] } }, input.session));
  return { events, effects, reply: { event_index: 0, message_id: m.id } };
}

type CallDoneCmd = Extract<SessionCommand, { kind: 'agent.call_done' }>;

/**
 * A model call's answer or a sleep's end: journaled; with nothing else in flight, the next step runs. A model call's
 * retryable failure is tried again first, under the built-in loop's rule (`retryPlan`), per call rather than per
 * message: the try is recorded as the call started again, and the run sees only the last try's result.
 */
export function agentCallDone(input: DecideInput, cmd: CallDoneCmd): Decision {
  const m = input.messages.get(cmd.message_id);
  const pending = m?.agent?.pending.find((p) => p.position === cmd.position);
  if (!m || !pending || m.attempt !== cmd.attempt || (m.status !== 'running' && m.status !== 'requires_action')) return NOTHING;
  // The answer of an earlier try of a call already retried changes nothing.
  if ((pending.attempt ?? 1) !== (cmd.call_attempt ?? 1)) return NOTHING;
  const base = { message_id: m.id, position: cmd.position, kind: pending.kind };
  if (!cmd.result.ok && pending.kind === 'model') {
    const tries = pending.attempt ?? 1;
    const plan = retryPlan(cmd.result, tries, input.agent.max_attempts);
    if (plan.retry) {
      const request = JSON.parse(pending.request_json ?? '{}') as Record<string, unknown>;
      const name = typeof request.llm_id === 'string' ? request.llm_id : 'default';
      return {
        events: [platform('agent.call_started', m.id, { ...base, name, arguments: request, attempt: tries + 1, error: cmd.result.error, retry_in_ms: plan.delay_ms })],
        effects: [agentModelCall(m, input.session, { position: cmd.position, call_index: pending.call_index ?? 0, request, attempt: tries + 1, delay_ms: plan.delay_ms })],
        reply: { event_index: 0, message_id: m.id },
      };
    }
    return done(input, m, platform('agent.call_failed', m.id, { ...base, error: plan.error }), cmd.position);
  }
  return done(input, m, cmd.result.ok ? platform('agent.call_completed', m.id, { ...base, output: cmd.result.output }) : platform('agent.call_failed', m.id, { ...base, error: cmd.result.error }), cmd.position);
}

/** A call's result journaled; with nothing else in flight, the next step runs. */
function done(input: DecideInput, m: MessageState, result: NewEvent, position: number): Decision {
  const events: NewEvent[] = [result];
  const effects: Effect[] = [];
  const rest = m.agent!.pending.filter((p) => p.position !== position);
  if (rest.length === 0 && m.pending_tool_calls.length === 0) {
    if (m.status === 'requires_action') events.push(messageStatus(m, 'running'));
    effects.push(agentStep(m, input.session));
  }
  return { events, effects, reply: { event_index: 0, message_id: m.id } };
}
