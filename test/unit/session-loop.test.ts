import assert from 'node:assert/strict';
import { decide } from '../../src/domain/session/decide.js';
import type { DecideInput } from '../../src/domain/session/decision.js';
import type { SessionCommand } from '../../src/domain/actors/session.js';
import { applyEvent, emptySessionState } from '../../src/domain/session/projection.js';
import { MESSAGE_MAX_BYTES, storedBytes } from '../../src/domain/session/message-size.js';
import { ConflictError, PayloadTooLargeError, UnprocessableError } from '../../src/domain/errors.js';
import type { EventEnvelope, MessageState, NewEvent, SessionState } from '../../src/domain/ledger.js';
import type { ToolDef } from '../../src/domain/agent.js';

/** The status an event moves to (a status change's `to`), or null for other types. */
const toOf = (e: NewEvent) => ('to' in e.data ? e.data.to : null);

const external: ToolDef = { name: 'ext', kind: 'external', path: 'e.json', timeout_seconds: 5, description: null, input_schema: { type: 'object' }, output_schema: { type: 'object' } };
const custom: ToolDef = { name: 'cus', kind: 'custom', path: 'c.js', timeout_seconds: 5, description: null, input_schema: { type: 'object' }, output_schema: null };

function agent(batch: string | null = null): DecideInput['agent'] {
  return {
    org_id: 'o',
    agent_id: 'a',
    agent_deleted: false,
    batch_id: batch,
    tools: new Map([[external.name, external], [custom.name, custom]]),
    max_turns: 4,
    max_attempts: 3,
    now: new Date(0),
    submit_url: 'http://x/v1/sessions/s/events',
    validate_output: (_t, v) => ((v as { ok?: unknown }).ok === true ? null : '/ok must be true'),
  };
}

function harness(batch: string | null = null) {
  const s: SessionState = emptySessionState('s');
  const m = new Map<string, MessageState>();
  const a = agent(batch);
  const run = (cmd: SessionCommand) => {
    const d = decide({ session: s, messages: m, agent: a }, cmd);
    for (const e of d.events) {
      const seq = s.last_sequence + 1;
      applyEvent(s, m, { ...e, id: `s:${seq}`, session_id: 's', sequence_number: seq, created_at: `t${seq}` } as EventEnvelope);
    }
    return d;
  };
  return { s, m, a, run };
}

const toolCalls = (callIndex: number, ...calls: [string, string][]): SessionCommand => ({
  kind: 'model.responded',
  command_id: `r${callIndex}`,
  message_id: 'm1',
  attempt: 1,
  call_index: callIndex,
  result: { ok: true, parts: calls.map(([id, name]) => ({ type: 'tool_call' as const, id, name, arguments: {} })), stop_reason: 'tool_use', usage: null },
});

describe('session actor: the tool loop', () => {
  it('requests an external call, waits in requires_action, validates and resumes', () => {
    const { m, run } = harness();
    run({ kind: 'user.message', command_id: 'u', message_id: 'm1', content: [{ type: 'text', text: 'x' }], metadata: null });
    const d = run(toolCalls(0, ['c1', 'ext']));
    assert.deepEqual(d.events.map((e) => e.type), ['assistant.message_completed', 'tool.call_requested', 'message.status_changed']);
    assert.equal(toOf(d.events[2]), 'requires_action');
    assert.deepEqual(d.effects.map((e) => e.kind), ['webhook', 'session.command']);
    assert.equal(m.get('m1')!.status, 'requires_action');
    const submit = (result: unknown): SessionCommand => ({ kind: 'tool.result_submitted', command_id: 'x', message_id: 'm1', tool_call_id: 'c1', result, is_error: false });
    assert.throws(() => run(submit({ ok: false })), UnprocessableError);
    const ok = run(submit({ ok: true }));
    assert.deepEqual(ok.events.map((e) => [e.type, toOf(e)]), [['tool.result_submitted', null], ['message.status_changed', 'running']]);
    assert.equal(ok.effects[0].kind, 'model.call');
    assert.throws(() => run(submit({ ok: true })), ConflictError);
  });

  it('holds a message under MESSAGE_MAX_BYTES: content, submitted results and custom tool output', () => {
    const { m, run } = harness();
    const big = 'x'.repeat(MESSAGE_MAX_BYTES / 2);
    assert.throws(
      () => run({ kind: 'user.message', command_id: 'u0', message_id: 'm0', content: [{ type: 'text', text: big }, { type: 'text', text: big }], metadata: null }),
      (err: unknown) => err instanceof PayloadTooLargeError && err.code === 'message_too_large',
    );
    assert.equal(m.size, 0, 'nothing recorded');
    run({ kind: 'user.message', command_id: 'u', message_id: 'm1', content: [{ type: 'text', text: 'x' }], metadata: null });
    run(toolCalls(0, ['c1', 'ext'], ['c2', 'ext'], ['c3', 'cus']));
    const submit = (id: string, result: unknown): SessionCommand => ({ kind: 'tool.result_submitted', command_id: `x-${id}`, message_id: 'm1', tool_call_id: id, result, is_error: false });
    run(submit('c1', { ok: true, text: big }));
    // A second half-budget result would take the message past the limit: refused, and the call stays pending.
    assert.throws(() => run(submit('c2', { ok: true, text: big })), (err: unknown) => err instanceof PayloadTooLargeError && err.code === 'message_output_too_large');
    assert.ok(m.get('m1')!.pending_tool_calls.some((c) => c.id === 'c2'));
    run(submit('c2', { ok: true, note: 'short' }));
    // A custom tool's output past the limit fails that call instead of breaking the message's document.
    const d = run({ kind: 'tool.completed', command_id: 't3', message_id: 'm1', attempt: 1, tool_call_id: 'c3', result: { ok: true, output: { text: big } } });
    const failed = d.events.find((e) => e.type === 'tool.call_failed');
    assert.match(String(failed?.data.error), /past 8 MiB/);
    assert.ok(storedBytes(m.get('m1')!) < MESSAGE_MAX_BYTES);
  });

  it('runs custom tools through the tool runner and ignores a late deadline', () => {
    const { m, run } = harness();
    run({ kind: 'user.message', command_id: 'u', message_id: 'm1', content: [{ type: 'text', text: 'x' }], metadata: null });
    const d = run(toolCalls(0, ['c1', 'cus'], ['c2', 'cus']));
    assert.deepEqual(d.effects.map((e) => e.kind), ['tool.run', 'tool.run']);
    assert.equal(m.get('m1')!.status, 'running');
    const first = run({ kind: 'tool.completed', command_id: 't1', message_id: 'm1', attempt: 1, tool_call_id: 'c1', result: { ok: true, output: { v: 1 } } });
    assert.deepEqual(first.effects, [], 'waits for the second call');
    const second = run({ kind: 'tool.completed', command_id: 't2', message_id: 'm1', attempt: 1, tool_call_id: 'c2', result: { ok: false, error: 'boom' } });
    assert.deepEqual(second.events.map((e) => e.type), ['tool.call_failed']);
    assert.equal(second.effects[0].kind, 'model.call');
    assert.deepEqual(m.get('m1')!.output.parts.map((p) => p.type), ['tool_call', 'tool_call', 'tool_result', 'tool_result']);
    assert.deepEqual(run({ kind: 'tool.deadline_passed', command_id: 'dl', message_id: 'm1', attempt: 1, tool_call_id: 'c1' }).events, []);
  });

  it('fails at max_turns, and a batch session reports its terminal message', () => {
    const { m, run } = harness('bat_1');
    run({ kind: 'user.message', command_id: 'u', message_id: 'm1', content: [{ type: 'text', text: 'x' }], metadata: null });
    for (let i = 0; i < 3; i++) run(toolCalls(i, [`u${i}`, 'nope']));
    const last = run(toolCalls(3, ['u3', 'nope']));
    assert.equal(m.get('m1')!.status, 'failed');
    assert.match(String(m.get('m1')!.error), /max_turns \(4\)/);
    assert.deepEqual(last.effects.map((e) => e.kind), ['webhook', 'batch.child_settled']);
  });

  it('retries a retryable model failure with backoff and a new attempt', () => {
    const { m, run } = harness();
    run({ kind: 'user.message', command_id: 'u', message_id: 'm1', content: [{ type: 'text', text: 'x' }], metadata: null });
    const d = run({ kind: 'model.responded', command_id: 'r', message_id: 'm1', attempt: 1, call_index: 0, result: { ok: false, error: '429', retryable: true, retry_after_ms: 5000 } });
    assert.deepEqual(d.events[0].data, { message_id: 'm1', from: 'running', to: 'running', attempt: 2, error: '429', retry_in_ms: 5000 });
    assert.equal(m.get('m1')!.attempt, 2);
    const call = d.effects[0] as Extract<(typeof d.effects)[number], { kind: 'model.call' }>;
    assert.equal(call.delay_ms, 5000);
    assert.equal(call.call.attempt, 2);
  });
});
