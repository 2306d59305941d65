import assert from 'node:assert/strict';
import { decide } from '../../src/domain/session/decide.js';
import type { DecideInput } from '../../src/domain/session/decision.js';
import type { SessionCommand } from '../../src/domain/actors/session.js';
import { applyEvent, emptySessionState } from '../../src/domain/session/projection.js';
import { outstanding } from '../../src/domain/session/outstanding.js';
import { ConflictError } from '../../src/domain/errors.js';
import { EVENT_DATA_SCHEMAS } from '../../src/domain/event-schemas.js';
import { createAjv } from '../../src/lib/schemas/validator.js';
import type { EventEnvelope, MessageState, NewEvent, SessionState } from '../../src/domain/ledger.js';
import type { ToolDef } from '../../src/domain/agent.js';
import type { OnBusy } from '../../src/domain/session/on-busy.js';
import { conversationItems, sentMessages } from '../../actors/router-proxy/transcript.js';

const ajv = createAjv('api');
/** Why an event's data does not match its type's schema (the ledger's own definition), or null. */
function validateEventData(type: NewEvent['type'], data: unknown): string | null {
  const validate = ajv.compile(EVENT_DATA_SCHEMAS[type] as object);
  return validate(data) ? null : ajv.errorsText(validate.errors);
}

const toOf = (e: NewEvent) => ('to' in e.data ? e.data.to : null);

const custom: ToolDef = { name: 'slow', kind: 'custom', path: 's.js', timeout_seconds: 30, description: null, input_schema: { type: 'object' }, output_schema: null };
const external: ToolDef = { name: 'ext', kind: 'external', path: 'e.json', timeout_seconds: 5, description: null, input_schema: { type: 'object' }, output_schema: null };

const agent: DecideInput['agent'] = {
  org_id: 'o',
  agent_id: 'a',
  agent_deleted: false,
  batch_id: null,
  tools: new Map([
    [custom.name, custom],
    [external.name, external],
  ]),
  max_turns: 10,
  max_attempts: 3,
  now: new Date(0),
  submit_url: 'http://x/v1/sessions/s/events',
  validate_output: () => null,
};

/** Applies a decision's events as the runtime does, checking each against its type's schema. */
function run(session: SessionState, messages: Map<string, MessageState>, cmd: SessionCommand, context: DecideInput['agent'] = agent) {
  const d = decide({ session, messages, agent: context }, cmd);
  for (const e of d.events) {
    const problem = validateEventData(e.type, e.data);
    assert.equal(problem, null, `${e.type} matches its schema`);
    const seq = session.last_sequence + 1;
    applyEvent(session, messages, { ...e, id: `s:${seq}`, session_id: 's', sequence_number: seq, created_at: `t${seq}` } as EventEnvelope);
  }
  return d;
}

const um = (id: string, onBusy?: OnBusy): SessionCommand => ({ kind: 'user.message', command_id: `um-${id}`, message_id: id, content: [{ type: 'text', text: id }], metadata: null, ...(onBusy ? { on_busy: onBusy } : {}) });
const toolCall = (id: string, name: string, callId: string): SessionCommand => ({
  kind: 'model.responded',
  command_id: `r-${id}`,
  message_id: id,
  attempt: 1,
  call_index: 0,
  result: { ok: true, parts: [{ type: 'text', text: 'working' }, { type: 'tool_call', id: callId, name, arguments: {} }], stop_reason: 'tool_use', usage: null },
});
const done = (id: string): SessionCommand => ({ kind: 'model.responded', command_id: `r-${id}`, message_id: id, attempt: 1, call_index: 0, result: { ok: true, parts: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn', usage: null } });

/** A session in each state a message can find it in. */
function sessionWith(state: 'idle' | 'running' | 'requires_action' | 'tool_running' | 'queued_only') {
  const s = emptySessionState('s');
  const m = new Map<string, MessageState>();
  if (state === 'idle') return { s, m };
  if (state === 'queued_only') {
    // A deferred start (a batch child): queued, its start not yet run.
    run(s, m, { ...um('m1'), start: 'deferred' } as SessionCommand);
    return { s, m };
  }
  run(s, m, um('m1'));
  if (state === 'requires_action') run(s, m, toolCall('m1', 'ext', 'c1'));
  if (state === 'tool_running') run(s, m, toolCall('m1', 'slow', 'c1'));
  return { s, m };
}

describe('busy-session policies (on_busy) in the session decision', () => {
  it('enqueue (and no on_busy) queues behind the running message, as before', () => {
    for (const policy of [undefined, 'enqueue'] as const) {
      const { s, m } = sessionWith('running');
      const d = run(s, m, um('m2', policy));
      assert.deepEqual(d.events.map(toOf), [null, 'queued']);
      assert.deepEqual(d.effects, []);
      assert.equal(s.running_message_id, 'm1');
      assert.deepEqual(s.queued_message_ids, ['m2']);
    }
  });

  it('every policy starts the message at once on an idle session', () => {
    for (const policy of ['enqueue', 'reject', 'interrupt', 'rollback'] as const) {
      const { s, m } = sessionWith('idle');
      const d = run(s, m, um('m1', policy));
      assert.deepEqual(d.events.map(toOf), [null, 'queued', 'running', 'running'], policy);
      assert.deepEqual(d.effects.map((e) => e.kind), ['model.call'], policy);
      assert.equal(s.running_message_id, 'm1');
    }
  });

  it('reject refuses with 409 session_busy naming on_busy and records nothing, whatever keeps the session busy', () => {
    for (const state of ['running', 'requires_action', 'tool_running', 'queued_only'] as const) {
      const { s, m } = sessionWith(state);
      const before = JSON.stringify(s);
      assert.throws(
        () => run(s, m, um('m2', 'reject')),
        (err: unknown) => err instanceof ConflictError && err.status === 409 && err.code === 'session_busy' && err.param === 'on_busy' && /m1/.test(err.message),
        state,
      );
      assert.equal(JSON.stringify(s), before, `${state}: nothing recorded`);
      assert.equal(m.has('m2'), false);
    }
  });

  it('reject follows the session default set at creation, and a message of its own overrides it', () => {
    const rejecting = { ...agent, default_on_busy: 'reject' as const };
    const { s, m } = sessionWith('running');
    assert.throws(() => run(s, m, um('m2'), rejecting), (err: unknown) => err instanceof ConflictError && err.code === 'session_busy');
    const d = run(s, m, um('m2', 'enqueue'), rejecting);
    assert.deepEqual(d.events.map(toOf), [null, 'queued']);
    const interrupting = { ...agent, default_on_busy: 'interrupt' as const };
    run(s, m, um('m3'), interrupting);
    assert.equal(m.get('m1')!.status, 'cancelled');
    assert.equal(s.running_message_id, 'm3');
  });

  for (const policy of ['interrupt', 'rollback'] as const) {
    it(`${policy} on a message waiting for its model cancels it, aborts its call and starts the new one in the same turn`, () => {
      const { s, m } = sessionWith('running');
      const d = run(s, m, um('m2', policy));
      assert.deepEqual(
        d.events.map((e) => [e.type, e.message_id, toOf(e)]),
        [
          ['message.status_changed', 'm1', 'cancelled'],
          ['user.message', 'm2', null],
          ['message.status_changed', 'm2', 'queued'],
          ['message.status_changed', 'm2', 'running'],
        ],
      );
      assert.deepEqual(d.events[0].data, { message_id: 'm1', from: 'running', to: 'cancelled', attempt: 1, interrupted_by: 'm2', on_busy: policy });
      assert.deepEqual(d.effects.map((e) => e.kind), ['work.abort', 'model.call']);
      assert.deepEqual(d.effects[0], { kind: 'work.abort', message_id: 'm1' });
      assert.equal(d.effects[1].kind === 'model.call' && d.effects[1].call.message_id, 'm2');
      assert.deepEqual({ event_index: d.reply.event_index, message_id: d.reply.message_id, as_of: d.reply.as_of }, { event_index: 1, message_id: 'm2', as_of: 3 });
      assert.equal(s.status, 'running', 'the session never went idle');
      assert.equal(s.running_message_id, 'm2');
      assert.equal(m.get('m1')!.interrupted, policy);
      // What the session waits on now is the new message's call: a resume issues exactly that.
      assert.deepEqual(outstanding({ session: s, messages: m, agent }).map((e) => e.kind === 'model.call' && e.call.message_id), ['m2']);
    });

    it(`${policy} on a message with tool calls in flight fails them as cancelled and keeps its output so far`, () => {
      for (const state of ['requires_action', 'tool_running'] as const) {
        const { s, m } = sessionWith(state);
        const d = run(s, m, um('m2', policy));
        assert.deepEqual(d.events.slice(0, 2).map((e) => [e.type, toOf(e)]), [['tool.call_failed', null], ['message.status_changed', 'cancelled']], state);
        assert.equal(d.events[0].type === 'tool.call_failed' && d.events[0].data.reason, 'cancelled');
        assert.equal(d.reply.event_index, 2, 'the reply is the new user.message');
        const m1 = m.get('m1')!;
        assert.equal(m1.status, 'cancelled');
        assert.deepEqual(m1.pending_tool_calls, []);
        assert.deepEqual(m1.output.parts.map((p) => p.type), ['text', 'tool_call', 'tool_result'], 'its output so far is kept');
        assert.equal(s.running_message_id, 'm2');
      }
    });

    it(`${policy} goes ahead of messages already queued, which run after it in their order`, () => {
      const { s, m } = sessionWith('running');
      run(s, m, um('m2'));
      run(s, m, um('m3', policy));
      assert.equal(s.running_message_id, 'm3');
      assert.deepEqual(s.queued_message_ids, ['m2']);
      const next = run(s, m, done('m3'));
      assert.deepEqual(next.events.map((e) => [e.message_id, toOf(e)]).slice(1), [['m3', 'completed'], ['m2', 'running']]);
    });

    it(`${policy} with nothing running (a deferred start pending) just queues`, () => {
      const { s, m } = sessionWith('queued_only');
      const d = run(s, m, um('m2', policy));
      assert.deepEqual(d.events.map(toOf), [null, 'queued']);
      assert.equal(m.get('m1')!.status, 'queued');
    });

    it(`${policy} redelivered is one command: the message already recorded answers as before and nothing is cancelled twice`, () => {
      const { s, m } = sessionWith('running');
      run(s, m, um('m2', policy));
      const again = run(s, m, um('m2', policy));
      assert.deepEqual(again.events, []);
      assert.deepEqual(again.effects, []);
      assert.equal(again.reply.message_id, 'm2');
      assert.equal(s.running_message_id, 'm2');
    });

    it(`a late model answer for the message ${policy} cancelled changes nothing`, () => {
      const { s, m } = sessionWith('running');
      run(s, m, um('m2', policy));
      const late = run(s, m, done('m1'));
      assert.deepEqual(late.events, []);
      assert.equal(m.get('m1')!.status, 'cancelled');
    });
  }

  it('the next model call keeps an interrupted turn in its history and leaves a rolled-back one out', () => {
    for (const policy of ['interrupt', 'rollback'] as const) {
      const { s, m } = sessionWith('tool_running');
      run(s, m, um('m2', policy));
      const history = [...m.values()];
      const sent = sentMessages(history, m.get('m2')!).map((x) => x.id);
      const items = conversationItems(history, m.get('m2')!);
      const texts = items.flatMap((i) => (i.kind === 'message' ? i.content.map((c) => ('text' in c ? c.text : '')) : []));
      if (policy === 'interrupt') {
        assert.deepEqual(sent, ['m1', 'm2']);
        assert.deepEqual(texts, ['m1', 'working', 'm2']);
        assert.ok(items.some((i) => i.kind === 'tool_result'), 'the cancelled tool call has its result');
      } else {
        assert.deepEqual(sent, ['m2']);
        assert.deepEqual(texts, ['m2']);
      }
    }
    // A client's cancel stays out of the history, as before.
    const { s, m } = sessionWith('running');
    run(s, m, { kind: 'message.cancel', command_id: 'cancel-m1', message_id: 'm1' });
    run(s, m, um('m2'));
    assert.equal(m.get('m1')!.interrupted, undefined);
    assert.deepEqual(sentMessages([...m.values()], m.get('m2')!).map((x) => x.id), ['m2']);
  });
});
