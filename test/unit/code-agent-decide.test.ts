import assert from 'node:assert/strict';
import { decide } from '../../src/domain/session/decide.js';
import type { DecideInput } from '../../src/domain/session/decision.js';
import type { SessionCommand } from '../../src/domain/actors/session.js';
import { applyEvent, emptySessionState } from '../../src/domain/session/projection.js';
import { outstanding } from '../../src/domain/session/outstanding.js';
import { checkStepOutcome } from '../../src/domain/session/code-step.js';
import { journalOf } from '../../src/domain/session/journal.js';
import type { EventEnvelope, MessageState } from '../../src/domain/ledger.js';
import type { ToolDef } from '../../src/domain/agent.js';

const tool = (name: string, kind: ToolDef['kind']): ToolDef => ({ name, kind, path: `tools/${name}`, timeout_seconds: 30, description: null, input_schema: null, output_schema: null });
const agent: DecideInput['agent'] = {
  org_id: 'o', agent_id: 'a', agent_deleted: false, batch_id: null, code: true,
  tools: new Map([tool('ext', 'external'), tool('cus', 'custom')].map((t) => [t.name, t])),
  max_turns: 10, max_attempts: 2, now: new Date(0), submit_url: 'http://x/v1/sessions/s/events', validate_output: () => null,
};

/** A session of a code agent, driven through decide and the projection as the turn does. */
function session() {
  const state = emptySessionState('s');
  const messages = new Map<string, MessageState>();
  const ledger: EventEnvelope[] = [];
  let n = 0;
  const run = (cmd: Record<string, unknown>) => {
    const d = decide({ session: state, messages, agent }, { command_id: `c${++n}`, ...cmd } as SessionCommand);
    for (const e of d.events) {
      const seq = state.last_sequence + 1;
      const ev = JSON.parse(JSON.stringify({ ...e, id: `s:${seq}`, session_id: 's', sequence_number: seq, created_at: new Date(seq).toISOString() })) as EventEnvelope;
      applyEvent(state, messages, ev);
      ledger.push(ev);
    }
    return d;
  };
  return { state, messages, ledger, run, resume: () => outstanding({ session: state, messages, agent }) };
}

describe('code agents: the session decisions', () => {
  it('starts a message with a step, journals a step calls, and steps again only when all have results', () => {
    const s = session();
    const first = s.run({ kind: 'user.message', message_id: 'm', content: [{ type: 'text', text: 'hi' }], metadata: null });
    assert.deepEqual(first.effects.map((e) => e.kind), ['agent.step']);
    const calls = [
      { position: 0, kind: 'model', name: 'default', arguments: { input: 'x' } },
      { position: 1, kind: 'tool', name: 'cus', arguments: {} },
      { position: 2, kind: 'sleep', name: 'sleep', arguments: { ms: 1000 } },
    ];
    const step = s.run({ kind: 'agent.stepped', message_id: 'm', attempt: 1, at: 0, outcome: { kind: 'suspend', emits: [], calls } });
    assert.deepEqual(step.effects.map((e) => e.kind), ['model.call', 'tool.run', 'session.command']);
    // After a lost Redis, the sweeper's resume issues the same work under the same ids (the sleep with the time left).
    const key = (e: (typeof step.effects)[number]) => ('job_id' in e ? e.job_id : e.kind === 'session.command' ? `${e.command.command_id} in ${e.delay_ms}` : e.kind);
    assert.deepEqual(s.resume().map(key).sort(), step.effects.map(key).sort());
    assert.deepEqual(s.run({ kind: 'agent.call_done', message_id: 'm', attempt: 1, position: 0, result: { ok: true, output: { text: 't' } } }).effects, []);
    assert.deepEqual(s.run({ kind: 'tool.completed', message_id: 'm', attempt: 1, tool_call_id: 'ctx_1', result: { ok: true, output: 3 } }).effects, []);
    const woke = s.run({ kind: 'agent.call_done', message_id: 'm', attempt: 1, position: 2, result: { ok: true, output: null } });
    assert.deepEqual(woke.effects.map((e) => e.kind), ['agent.step']);
    assert.equal((woke.effects[0] as { job: { at: number } }).job.at, 3);
    // A late copy of the first step's result changes nothing.
    assert.deepEqual(s.run({ kind: 'agent.stepped', message_id: 'm', attempt: 1, at: 0, outcome: { kind: 'done', emits: [], answer: 'stale' } }).events, []);
    const journal = journalOf(s.ledger, 'm');
    assert.deepEqual(journal.map((e) => [e.position, e.kind, e.result]), [[0, 'model', { ok: true, output: { text: 't' } }], [1, 'tool', { ok: true, output: 3 }], [2, 'sleep', { ok: true, output: null }]]);
    const done = s.run({ kind: 'agent.stepped', message_id: 'm', attempt: 1, at: 3, outcome: { kind: 'done', emits: [{ position: 3, text: 'bye' }], answer: 'fin' } });
    assert.deepEqual(done.events.map((e) => e.type), ['agent.progress', 'assistant.message_completed', 'message.status_changed', 'session.status_changed']);
    assert.equal(s.messages.get('m')!.status, 'completed');
  });

  it("retries a model call's retryable failure per call, under the built-in loop's rule, ignores an earlier try's late answer, and gives up at max_attempts", () => {
    const s = session();
    s.run({ kind: 'user.message', message_id: 'm', content: [{ type: 'text', text: 'hi' }], metadata: null });
    const calls = [{ position: 0, kind: 'model', name: 'main', arguments: { llm_id: 'main', input: 'x' } }, { position: 1, kind: 'tool', name: 'cus', arguments: {} }];
    const first = s.run({ kind: 'agent.stepped', message_id: 'm', attempt: 1, at: 0, outcome: { kind: 'suspend', emits: [], calls } });
    const firstJob = first.effects.find((e) => e.kind === 'model.call') as { job_id: string };
    const retry = s.run({ kind: 'agent.call_done', message_id: 'm', attempt: 1, position: 0, result: { ok: false, error: 'upstream answered 503', retryable: true, retry_after_ms: 1500 } });
    assert.deepEqual(retry.events.map((e) => [e.type, (e.data as { attempt?: number }).attempt, (e.data as { retry_in_ms?: number }).retry_in_ms]), [['agent.call_started', 2, 1500]], 'the Retry-After is longer than the 1 s backoff');
    const again = retry.effects[0] as { kind: string; job_id: string; delay_ms: number; call: { call_attempt: number; call_index: number } };
    assert.equal(again.kind, 'model.call');
    assert.notEqual(again.job_id, firstJob.job_id, 'a new job for the new try');
    assert.deepEqual([again.delay_ms, again.call.call_attempt, again.call.call_index], [1500, 2, 0]);
    assert.equal(s.messages.get('m')!.agent!.model_calls, 1, 'a retry is the same model call');
    assert.equal(s.messages.get('m')!.attempt, 1, "the message's attempt, and so its tool call in flight, are untouched");
    assert.ok(s.resume().some((e) => e.kind === 'model.call' && e.job_id === again.job_id), 'a resume issues the current try');
    // The first try's answer, redelivered late, changes nothing.
    assert.deepEqual(s.run({ kind: 'agent.call_done', message_id: 'm', attempt: 1, position: 0, result: { ok: true, output: { text: 'late' } } }).events, []);
    const gaveUp = s.run({ kind: 'agent.call_done', message_id: 'm', attempt: 1, position: 0, call_attempt: 2, result: { ok: false, error: 'upstream answered 503', retryable: true } });
    assert.deepEqual(gaveUp.events.map((e) => [e.type, (e.data as { error?: string }).error]), [['agent.call_failed', 'upstream answered 503 (gave up after 2 attempts)']]);
    assert.deepEqual(journalOf(s.ledger, 'm')[0].result, { ok: false, error: 'upstream answered 503 (gave up after 2 attempts)' });
  });

  it("hands a model call's non-retryable failure to the run at once", () => {
    const s = session();
    s.run({ kind: 'user.message', message_id: 'm', content: [{ type: 'text', text: 'hi' }], metadata: null });
    s.run({ kind: 'agent.stepped', message_id: 'm', attempt: 1, at: 0, outcome: { kind: 'suspend', emits: [], calls: [{ position: 0, kind: 'model', name: 'default', arguments: {} }] } });
    const failed = s.run({ kind: 'agent.call_done', message_id: 'm', attempt: 1, position: 0, result: { ok: false, error: 'upstream answered 400' } });
    assert.deepEqual(failed.events.map((e) => e.type), ['agent.call_failed']);
    assert.deepEqual(failed.effects.map((e) => e.kind), ['agent.step']);
  });

  it('an external call suspends the message as requires_action until its result', () => {
    const s = session();
    s.run({ kind: 'user.message', message_id: 'm', content: [{ type: 'text', text: 'hi' }], metadata: null });
    s.run({ kind: 'agent.stepped', message_id: 'm', attempt: 1, at: 0, outcome: { kind: 'suspend', emits: [], calls: [{ position: 0, kind: 'tool', name: 'ext', arguments: { q: 1 } }] } });
    assert.equal(s.messages.get('m')!.status, 'requires_action');
    assert.deepEqual(s.resume().map((e) => e.kind), ['session.command'], 'only its deadline waits: no process, no step');
    const back = s.run({ kind: 'tool.result_submitted', message_id: 'm', tool_call_id: 'ctx_0', result: { a: 1 }, is_error: false });
    assert.deepEqual(back.effects.map((e) => e.kind), ['agent.step']);
    assert.equal(s.messages.get('m')!.status, 'running');
  });
});

describe('code agents: a step report is checked before it is believed', () => {
  const ok = { kind: 'suspend', emits: [{ position: 2, text: 'x' }], calls: [{ position: 3, kind: 'tool', name: 't', arguments: {} }] };
  it('takes a report whose positions continue the journal', () => assert.equal(checkStepOutcome(ok, 2).kind, 'suspend'));
  for (const [why, raw, at] of [
    ['a gap', { ...ok, calls: [{ ...ok.calls[0], position: 5 }] }, 2],
    ['a repeat of a journaled position', ok, 3],
    ['an unknown kind of call', { ...ok, calls: [{ ...ok.calls[0], kind: 'shell' }] }, 2],
    ['arguments that are not an object', { ...ok, calls: [{ ...ok.calls[0], arguments: [1] }] }, 2],
    ['a suspend without calls', { kind: 'suspend', emits: [], calls: [] }, 0],
    ['not an object', 'done', 0],
  ] as const) {
    it(`fails the message on ${why}`, () => {
      const out = checkStepOutcome(raw, at);
      assert.equal(out.kind, 'failed');
      assert.match((out as { error: string }).error, /malformed/);
    });
  }
  it('caps the calls of one message', () => assert.match((checkStepOutcome({ kind: 'suspend', emits: [], calls: [{ position: 2000, kind: 'tool', name: 't', arguments: {} }] }, 2000) as { error: string }).error, /more than 2000/));
});
