import assert from 'node:assert/strict';
import { decide, MAX_QUEUED_MESSAGES } from '../../src/domain/session/decide.js';
import type { DecideInput } from '../../src/domain/session/decision.js';
import type { SessionCommand } from '../../src/domain/actors/session.js';
import { applyEvent, emptySessionState } from '../../src/domain/session/projection.js';
import { ConflictError, NotFoundError } from '../../src/domain/errors.js';
import type { EventEnvelope, MessageState, NewEvent, SessionState } from '../../src/domain/ledger.js';
import type { ToolDef } from '../../src/domain/agent.js';

/** The status an event moves to (a status change's `to`), or null for other types. */
const toOf = (e: NewEvent) => ('to' in e.data ? e.data.to : null);
const errorOf = (e: NewEvent) => ('error' in e.data ? e.data.error : undefined);

/** Applies a decision's events the way the runtime does, with sequence numbers. */
const agent: DecideInput['agent'] = {
  org_id: 'o',
  agent_id: 'a',
  agent_deleted: false,
  batch_id: null,
  tools: new Map(),
  max_turns: 10,
  max_attempts: 3,
  now: new Date(0),
  submit_url: 'http://x/v1/sessions/s/events',
  validate_output: () => null,
};

function run(session: SessionState, messages: Map<string, MessageState>, cmd: SessionCommand, context: DecideInput['agent'] = agent) {
  const d = decide({ session, messages, agent: context }, cmd);
  d.events.forEach((e, i) => {
    const seq = session.last_sequence + 1;
    applyEvent(session, messages, { ...e, id: `s:${seq}`, session_id: 's', sequence_number: seq, created_at: `t${seq}` } as EventEnvelope);
    void i;
  });
  return d;
}

const um = (id: string): SessionCommand => ({ kind: 'user.message', command_id: `um-${id}`, message_id: id, content: [{ type: 'text', text: id }], metadata: null });
const ok = (id: string, text = 'done'): SessionCommand => ({ kind: 'model.responded', command_id: `r-${id}`, message_id: id, attempt: 1, call_index: 0, result: { ok: true, parts: [{ type: 'text', text }], stop_reason: 'end_turn', usage: null } });

describe('session actor decisions', () => {
  it('records a user message as queued, moves the session to running and starts it in the same turn', () => {
    const s = emptySessionState('s');
    const m = new Map<string, MessageState>();
    const d = run(s, m, um('m1'));
    assert.deepEqual(d.events.map((e) => [e.type, toOf(e)]), [['user.message', null], ['message.status_changed', 'queued'], ['session.status_changed', 'running'], ['message.status_changed', 'running']]);
    assert.deepEqual(d.events[1].data, { message_id: 'm1', from: null, to: 'queued', attempt: 1 });
    assert.deepEqual(d.effects.map((e) => e.kind), ['model.call']);
    assert.equal(d.reply.as_of, 3, 'the reply is taken with the message recorded, before it starts');
    assert.equal(s.status, 'running');
    assert.equal(s.running_message_id, 'm1');
    assert.deepEqual(s.queued_message_ids, []);
  });

  it('refuses a message with 409 session_queue_full once MAX_QUEUED_MESSAGES wait, and takes one again when the queue moves', () => {
    const s = emptySessionState('s');
    const m = new Map<string, MessageState>();
    run(s, m, um('m0'));
    for (let i = 1; i <= MAX_QUEUED_MESSAGES; i++) run(s, m, um(`q${i}`));
    assert.equal(s.queued_message_ids.length, MAX_QUEUED_MESSAGES);
    assert.throws(() => run(s, m, um('over')), (err: unknown) => err instanceof ConflictError && err.code === 'session_queue_full');
    assert.equal(s.queued_message_ids.length, MAX_QUEUED_MESSAGES, 'nothing recorded');
    // A redelivered command for a message already queued still answers as before.
    assert.equal(run(s, m, um('q1')).reply.event_index, null);
    run(s, m, ok('m0'));
    const next = run(s, m, um('next'));
    assert.deepEqual(next.events.slice(0, next.reply.as_of).map(toOf), [null, 'queued'], 'answered as recorded');
  });

  it('refuses a new message once the agent is deleted (409 agent_deleted), and lets the work it took finish', () => {
    const ext: ToolDef = { name: 'ext', kind: 'external', path: 'e.json', timeout_seconds: 5, description: null, input_schema: { type: 'object' }, output_schema: null };
    const live = { ...agent, tools: new Map([[ext.name, ext]]) };
    const deleted = { ...live, agent_deleted: true };
    const s = emptySessionState('s');
    const m = new Map<string, MessageState>();
    run(s, m, um('m1'), live);
    run(s, m, um('m2'), live);
    // The agent is deleted while m1 runs and m2 waits.
    const before = s.last_sequence;
    assert.throws(() => run(s, m, um('m3'), deleted), (err: unknown) => err instanceof ConflictError && err.status === 409 && err.code === 'agent_deleted' && /take no new messages/.test(err.message));
    assert.equal(s.last_sequence, before, 'nothing recorded');
    assert.equal(m.has('m3'), false);
    assert.equal(run(s, m, um('m2'), deleted).reply.event_index, null, 'a redelivered message it took is answered, not refused');
    // m1 asks for an external tool; the result for that turn in flight is taken, and m1 finishes.
    const call: SessionCommand = { kind: 'model.responded', command_id: 'r-m1-call', message_id: 'm1', attempt: 1, call_index: 0, result: { ok: true, parts: [{ type: 'tool_call', id: 'c1', name: 'ext', arguments: {} }], stop_reason: 'tool_use', usage: null } };
    run(s, m, call, deleted);
    assert.equal(m.get('m1')!.status, 'requires_action');
    const submitted = run(s, m, { kind: 'tool.result_submitted', command_id: 'tr-1', message_id: 'm1', tool_call_id: 'c1', result: { ok: true }, is_error: false }, deleted);
    assert.deepEqual(submitted.events.map((e) => [e.type, toOf(e)]), [['tool.result_submitted', null], ['message.status_changed', 'running']]);
    const answer: SessionCommand = { kind: 'model.responded', command_id: 'r-m1-end', message_id: 'm1', attempt: 1, call_index: 1, result: { ok: true, parts: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn', usage: null } };
    run(s, m, answer, deleted);
    assert.equal(m.get('m1')!.status, 'completed');
    // The message queued before the delete starts and can be cancelled: nothing is left waiting.
    assert.equal(m.get('m2')!.status, 'running');
    run(s, m, { kind: 'message.cancel', command_id: 'cancel-m2', message_id: 'm2' }, deleted);
    assert.equal(m.get('m2')!.status, 'cancelled');
    assert.equal(s.status, 'idle');
  });

  it('queues later messages FIFO and starts the next when one completes', () => {
    const s = emptySessionState('s');
    const m = new Map<string, MessageState>();
    run(s, m, um('m1'));
    const second = run(s, m, um('m2'));
    assert.deepEqual(second.effects, [], 'm2 waits for m1');
    const done = run(s, m, ok('m1'));
    assert.deepEqual(done.events.map((e) => [e.type, e.message_id, toOf(e)]), [
      ['assistant.message_completed', 'm1', null],
      ['message.status_changed', 'm1', 'completed'],
      ['message.status_changed', 'm2', 'running'],
    ]);
    assert.equal(s.running_message_id, 'm2');
    const last = run(s, m, ok('m2'));
    assert.deepEqual(last.events.at(-1)!.data, { from: 'running', to: 'idle' });
    assert.equal(s.status, 'idle');
    assert.equal(m.get('m1')!.output.parts.length, 1);
  });

  it('ignores a duplicate or late model answer', () => {
    const s = emptySessionState('s');
    const m = new Map<string, MessageState>();
    run(s, m, um('m1'));
    run(s, m, ok('m1'));
    assert.deepEqual(run(s, m, ok('m1')).events, []);
    assert.deepEqual(run(s, m, { kind: 'message.start', command_id: 'x', message_id: 'm1' }).events, []);
  });

  it('fails the message on a model error and returns the session to idle', () => {
    const s = emptySessionState('s');
    const m = new Map<string, MessageState>();
    run(s, m, um('m1'));
    const d = run(s, m, { kind: 'model.responded', command_id: 'r', message_id: 'm1', attempt: 1, call_index: 0, result: { ok: false, error: 'upstream 400' } });
    assert.equal(toOf(d.events[0]), 'failed');
    assert.equal(errorOf(d.events[0]), 'upstream 400');
    assert.equal(m.get('m1')!.status, 'failed');
    assert.equal(s.status, 'idle');
  });

  it('cancels running and queued messages and refuses terminal ones', () => {
    const s = emptySessionState('s');
    const m = new Map<string, MessageState>();
    run(s, m, um('m1'));
    run(s, m, um('m2'));
    run(s, m, { kind: 'message.cancel', command_id: 'c2', message_id: 'm2' });
    assert.equal(m.get('m2')!.status, 'cancelled');
    const c1 = run(s, m, { kind: 'message.cancel', command_id: 'c1', message_id: 'm1' });
    assert.deepEqual(c1.events.map(toOf), ['cancelled', 'idle']);
    assert.deepEqual(c1.effects.filter((e) => e.kind === 'work.abort'), [{ kind: 'work.abort', message_id: 'm1' }], 'the work in flight is aborted');
    assert.throws(() => decide({ session: s, messages: m, agent }, { kind: 'message.cancel', command_id: 'c3', message_id: 'm1' }), ConflictError);
    assert.throws(() => decide({ session: s, messages: m, agent }, { kind: 'message.cancel', command_id: 'c4', message_id: 'nope' }), NotFoundError);
  });

  it('fails a quarantined message (poison work) with its error, starts the next one, and leaves an ended one as it is', () => {
    const s = emptySessionState('s');
    const m = new Map<string, MessageState>();
    run(s, m, um('m1'));
    run(s, m, um('m2'));
    const error = 'processing_budget_exceeded: stopped';
    const q = run(s, m, { kind: 'message.quarantine', command_id: 'quarantine-r-m1', message_id: 'm1', error });
    assert.deepEqual(q.events.map(toOf), ['failed', 'running']);
    assert.equal(errorOf(q.events[0]), error);
    assert.deepEqual(q.effects.map((e) => e.kind), ['work.abort', 'webhook', 'model.call'], 'its work stops, the failure is reported, m2 starts');
    assert.equal(m.get('m1')!.status, 'failed');
    assert.equal(s.running_message_id, 'm2');
    const again = run(s, m, { kind: 'message.quarantine', command_id: 'quarantine-x', message_id: 'm1', error });
    assert.deepEqual(again.events, [], 'an ended message stays as it is');
    assert.deepEqual(run(s, m, { kind: 'message.quarantine', command_id: 'quarantine-y', message_id: 'never', error }).events, []);
  });

  it('fails the pending tool calls of a cancelled message before cancelling it', () => {
    const s = emptySessionState('s');
    const m = new Map<string, MessageState>();
    run(s, m, um('m1'));
    const calls: SessionCommand = { kind: 'model.responded', command_id: 'r-calls', message_id: 'm1', attempt: 1, call_index: 0, result: { ok: true, parts: [{ type: 'tool_call', id: 'c1', name: 'lookup', arguments: {} }, { type: 'tool_call', id: 'c2', name: 'gone', arguments: {} }], stop_reason: 'tool_use', usage: null } };
    const withTool = { ...agent, tools: new Map([['lookup', { name: 'lookup', kind: 'external' as const, path: 'l.json', timeout_seconds: 60, description: null, input_schema: null, output_schema: null }]]) };
    const d1 = decide({ session: s, messages: m, agent: withTool }, calls);
    d1.events.forEach((e) => applyEvent(s, m, { ...e, id: `s:${s.last_sequence + 1}`, session_id: 's', sequence_number: s.last_sequence + 1, created_at: 't' } as EventEnvelope));
    const d = decide({ session: s, messages: m, agent: withTool }, { kind: 'message.cancel', command_id: 'cx', message_id: 'm1' });
    const failed = d.events.filter((e) => e.type === 'tool.call_failed').map((e) => [e.data.tool_call_id, e.data.reason, e.data.kind]);
    assert.deepEqual(failed.filter(([id]) => id === 'c1'), [['c1', 'cancelled', 'external']]);
    assert.equal(d.events[d.reply.event_index!].type, 'message.status_changed', 'the reply is the cancel event');
    assert.equal(toOf(d.events[d.reply.event_index!]), 'cancelled');
  });
});

describe('projection catch-up', () => {
  it('re-applies to the session, but not to a message that already has the events', () => {
    const s = emptySessionState('s');
    const m = new Map<string, MessageState>();
    const events: EventEnvelope[] = [];
    const record = (cmd: SessionCommand) => {
      const d = decide({ session: s, messages: m, agent }, cmd);
      for (const e of d.events) {
        const ev = { ...e, id: `s:${s.last_sequence + 1}`, session_id: 's', sequence_number: s.last_sequence + 1, created_at: 't' } as EventEnvelope;
        events.push(ev);
        applyEvent(s, m, ev);
      }
    };
    record(um('m1'));
    const before = structuredClone({ session: s, message: m.get('m1')! });
    record(ok('m1', 'answer'));
    // The turn saved its message but died before saving the session: replay the ledger onto that mix.
    const session = before.session;
    const messages = new Map([['m1', structuredClone(m.get('m1')!)]]);
    for (const ev of events) applyEvent(session, messages, ev);
    assert.deepEqual(messages.get('m1')!.output.parts, [{ type: 'text', text: 'answer' }], 'no duplicated output');
    assert.equal(session.status, 'idle');
    assert.equal(session.last_sequence, s.last_sequence);
    assert.equal(session.last_message_status, 'completed');
  });
});
