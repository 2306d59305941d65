import assert from 'node:assert/strict';
import { decide } from '../../src/domain/session/decide.js';
import type { DecideInput } from '../../src/domain/session/decision.js';
import type { Effect, SessionCommand } from '../../src/domain/actors/session.js';
import { applyEvent, emptySessionState } from '../../src/domain/session/projection.js';
import { outstanding } from '../../src/domain/session/outstanding.js';
import { ConflictError, NotFoundError } from '../../src/domain/errors.js';
import type { EventEnvelope, MessageState, NewEvent, SessionState } from '../../src/domain/ledger.js';
import type { ToolDef } from '../../src/domain/agent.js';

const toOf = (e: NewEvent) => ('to' in e.data ? e.data.to : null);
const askCustom: ToolDef = { name: 'rm', kind: 'custom', path: 'rm.js', timeout_seconds: 30, description: null, input_schema: null, output_schema: null, permission: 'always_ask' };
const askExternal: ToolDef = { name: 'pay', kind: 'external', path: 'pay.json', timeout_seconds: 20, description: null, input_schema: null, output_schema: null, permission: 'always_ask' };
const allowCustom: ToolDef = { name: 'ls', kind: 'custom', path: 'ls.js', timeout_seconds: 5, description: null, input_schema: null, output_schema: null };

function harness() {
  const s: SessionState = emptySessionState('s');
  const m = new Map<string, MessageState>();
  const agent: DecideInput['agent'] = {
    org_id: 'o', agent_id: 'a', agent_deleted: false, batch_id: null,
    tools: new Map([askCustom, askExternal, allowCustom].map((t) => [t.name, t])),
    max_turns: 5, max_attempts: 3, now: new Date(0), submit_url: 'http://x/v1/sessions/s/events', validate_output: () => null,
  };
  const run = (cmd: SessionCommand) => {
    const d = decide({ session: s, messages: m, agent }, cmd);
    for (const e of d.events) {
      const seq = s.last_sequence + 1;
      applyEvent(s, m, { ...e, id: `s:${seq}`, session_id: 's', sequence_number: seq, created_at: `t${seq}` } as EventEnvelope);
    }
    return d;
  };
  run({ kind: 'user.message', command_id: 'u', message_id: 'm1', content: [{ type: 'text', text: 'x' }], metadata: null });
  const owed = () => outstanding({ session: s, messages: m, agent });
  return { s, m, run, owed };
}

const calls = (...c: [string, string][]): SessionCommand => ({
  kind: 'model.responded', command_id: 'r0', message_id: 'm1', attempt: 1, call_index: 0,
  result: { ok: true, parts: c.map(([id, name]) => ({ type: 'tool_call' as const, id, name, arguments: { path: '/tmp' } })), stop_reason: 'tool_use', usage: null },
});
const answer = (id: string, result: 'allow' | 'deny', deny_message?: string): SessionCommand => ({ kind: 'tool.confirmation', command_id: `a-${id}-${result}`, message_id: 'm1', tool_call_id: id, result, ...(deny_message ? { deny_message } : {}) });
const kinds = (effects: Effect[]) => effects.map((e) => (e.kind === 'session.command' ? e.command.kind : e.kind));

describe('session actor: tool confirmations (always_ask)', () => {
  it('asks instead of running, waits in requires_action, and owes only the confirmation deadline', () => {
    const { m, run, owed } = harness();
    const d = run(calls(['c1', 'rm']));
    assert.deepEqual(d.events.map((e) => e.type), ['assistant.message_completed', 'tool.confirmation_requested', 'message.status_changed']);
    assert.deepEqual(d.events[1].data, { message_id: 'm1', tool_call_id: 'c1', tool_name: 'rm', arguments: { path: '/tmp' }, expires_at: new Date(30_000).toISOString() });
    assert.equal(toOf(d.events[2]), 'requires_action');
    assert.deepEqual(kinds(d.effects), ['webhook', 'tool.confirmation_expired']);
    const hook = d.effects[0] as Extract<Effect, { kind: 'webhook' }>;
    assert.equal(hook.job.kind, 'tool.confirmation_requested');
    assert.deepEqual(m.get('m1')!.pending_tool_calls, [{ id: 'c1', name: 'rm', awaiting_confirmation: true, expires_at: new Date(30_000).toISOString() }]);
    assert.deepEqual(kinds(owed()), ['tool.confirmation_expired'], 'a resume re-issues the deadline, never the run');
  });

  it('allow runs the custom tool and the message goes back to running; a second answer is a 409', () => {
    const { m, run, owed } = harness();
    run(calls(['c1', 'rm']));
    const d = run(answer('c1', 'allow'));
    assert.deepEqual(d.events.map((e) => [e.type, toOf(e)]), [['user.tool_confirmation', null], ['message.status_changed', 'running']]);
    assert.deepEqual(kinds(d.effects), ['tool.run']);
    assert.equal(d.events[0].source, 'user');
    assert.deepEqual(kinds(owed()), ['tool.run']);
    assert.throws(() => run(answer('c1', 'allow')), (e: unknown) => e instanceof ConflictError && e.code === 'tool_call_not_awaiting_confirmation');
    assert.throws(() => run(answer('c1', 'deny')), ConflictError);
    // The deadline arriving after the answer does nothing.
    assert.deepEqual(run({ kind: 'tool.confirmation_expired', command_id: 'x', message_id: 'm1', attempt: 1, tool_call_id: 'c1' }).events, []);
    const done = run({ kind: 'tool.completed', command_id: 't', message_id: 'm1', attempt: 1, tool_call_id: 'c1', result: { ok: true, output: 'gone' } });
    assert.deepEqual(kinds(done.effects), ['model.call']);
    assert.equal(m.get('m1')!.output.parts.at(-1)!.type, 'tool_result');
  });

  it('deny fails the call with the deny message as the model\'s error result, and nothing runs', () => {
    const { m, run } = harness();
    run(calls(['c1', 'rm']));
    const d = run(answer('c1', 'deny', 'not that folder'));
    assert.deepEqual(d.events.map((e) => e.type), ['user.tool_confirmation', 'tool.call_failed', 'message.status_changed']);
    assert.deepEqual([(d.events[1].data as { reason: string }).reason, (d.events[1].data as { error: string }).error], ['denied', 'not that folder']);
    assert.deepEqual(kinds(d.effects), ['model.call']);
    const result = m.get('m1')!.output.parts.at(-1)!;
    assert.deepEqual(result, { type: 'tool_result', tool_call_id: 'c1', tool_name: 'rm', content: [{ type: 'text', text: 'not that folder' }], is_error: true });
  });

  it('an allowed external tool is then requested from the client; its result is refused before the confirmation', () => {
    const { m, run } = harness();
    run(calls(['c1', 'pay']));
    assert.throws(() => run({ kind: 'tool.result_submitted', command_id: 'r', message_id: 'm1', tool_call_id: 'c1', result: {}, is_error: false }), (e: unknown) => e instanceof ConflictError && e.code === 'tool_call_awaiting_confirmation');
    const d = run(answer('c1', 'allow'));
    assert.deepEqual(d.events.map((e) => e.type), ['user.tool_confirmation', 'tool.call_requested']);
    assert.deepEqual(kinds(d.effects), ['webhook', 'tool.deadline_passed']);
    assert.equal(m.get('m1')!.status, 'requires_action');
  });

  it('several calls in one response are confirmed one by one; the model is called once all have results', () => {
    const { m, run } = harness();
    run(calls(['c1', 'rm'], ['c2', 'rm'], ['c3', 'ls']));
    const first = run(answer('c2', 'deny'));
    assert.deepEqual(kinds(first.effects), [], 'c1 still waits');
    assert.equal(m.get('m1')!.status, 'requires_action');
    const second = run(answer('c1', 'allow'));
    assert.deepEqual(second.events.map((e) => [e.type, toOf(e)]), [['user.tool_confirmation', null], ['message.status_changed', 'running']], 'no call waits on the client any more');
    run({ kind: 'tool.completed', command_id: 't3', message_id: 'm1', attempt: 1, tool_call_id: 'c3', result: { ok: true, output: 1 } });
    const last = run({ kind: 'tool.completed', command_id: 't1', message_id: 'm1', attempt: 1, tool_call_id: 'c1', result: { ok: true, output: 2 } });
    assert.deepEqual(kinds(last.effects), ['model.call']);
  });

  it('expiry fails the call as a timeout; unknown message 404; cancel fails the waiting call', () => {
    const { m, run } = harness();
    run(calls(['c1', 'rm'], ['c2', 'rm']));
    assert.throws(() => run({ ...answer('c1', 'allow'), message_id: 'nope' } as SessionCommand), NotFoundError);
    const exp = run({ kind: 'tool.confirmation_expired', command_id: 'e', message_id: 'm1', attempt: 1, tool_call_id: 'c1' });
    assert.deepEqual([exp.events[0].type, (exp.events[0].data as { reason: string }).reason], ['tool.call_failed', 'timeout']);
    const cancel = run({ kind: 'message.cancel', command_id: 'k', message_id: 'm1' });
    assert.deepEqual(cancel.events.map((e) => [e.type, 'reason' in e.data ? (e.data as { reason: string }).reason : toOf(e)]), [['tool.call_failed', 'cancelled'], ['message.status_changed', 'cancelled'], ['session.status_changed', 'idle']]);
    assert.equal(m.get('m1')!.status, 'cancelled');
    assert.throws(() => run(answer('c2', 'allow')), ConflictError);
  });
});
