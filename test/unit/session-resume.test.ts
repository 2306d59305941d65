import assert from 'node:assert/strict';
import { decide } from '../../src/domain/session/decide.js';
import type { DecideInput } from '../../src/domain/session/decision.js';
import type { Effect, SessionCommand } from '../../src/domain/actors/session.js';
import { stillOwed } from '../../src/domain/session/outstanding.js';
import { applyEvent, emptySessionState } from '../../src/domain/session/projection.js';
import type { EventEnvelope, MessageState, SessionState } from '../../src/domain/ledger.js';
import type { ToolDef } from '../../src/domain/agent.js';

const tools = new Map<string, ToolDef>([
  ['calc', { name: 'calc', kind: 'custom', path: 'calc.js', timeout_seconds: 60 } as ToolDef],
  ['ask', { name: 'ask', kind: 'external', path: 'ask.json', timeout_seconds: 30 } as ToolDef],
]);
const agent: DecideInput['agent'] = { org_id: 'o', agent_id: 'a', agent_deleted: false, batch_id: null, tools, max_turns: 10, max_attempts: 3, now: new Date(1000), submit_url: 'http://x', validate_output: () => null };

function run(session: SessionState, messages: Map<string, MessageState>, cmd: SessionCommand, now = agent.now) {
  const d = decide({ session, messages, agent: { ...agent, now } }, cmd);
  for (const e of d.events) {
    const seq = session.last_sequence + 1;
    applyEvent(session, messages, { ...e, id: `s:${seq}`, session_id: 's', sequence_number: seq, created_at: `t${seq}` } as EventEnvelope);
  }
  return d;
}

const um = (id: string): SessionCommand => ({ kind: 'user.message', command_id: `um-${id}`, message_id: id, content: [{ type: 'text', text: id }], metadata: null });
const resume: SessionCommand = { kind: 'session.resume', command_id: 'resume-1' };
const ids = (effects: Effect[]) => effects.map((e) => (e.kind === 'session.command' ? `cmd:${e.command.command_id}` : e.kind === 'work.abort' ? `abort:${e.message_id}` : e.job_id));

describe('session resume (stranded work)', () => {
  it('issues the running message\'s model call again under the job id the original turn used, and appends nothing', () => {
    const s = emptySessionState('s');
    const m = new Map<string, MessageState>();
    const first = run(s, m, um('m1'));
    run(s, m, um('m2'));
    const before = s.last_sequence;
    const d = run(s, m, resume);
    assert.deepEqual(d.events, []);
    assert.equal(s.last_sequence, before);
    assert.deepEqual(ids(d.effects), ids(first.effects));
    assert.deepEqual(ids(d.effects), ['model-m1-1-0']);
  });

  it('issues custom tool runs and external tool deadlines (with the time left) for pending calls', () => {
    const s = emptySessionState('s');
    const m = new Map<string, MessageState>();
    run(s, m, um('m1'));
    const answer: SessionCommand = {
      kind: 'model.responded', command_id: 'r1', message_id: 'm1', attempt: 1, call_index: 0,
      result: { ok: true, stop_reason: 'tool_use', usage: null, parts: [{ type: 'tool_call', id: 'c1', name: 'calc', arguments: { x: 1 } }, { type: 'tool_call', id: 'c2', name: 'ask', arguments: {} }] },
    };
    const original = run(s, m, answer);
    const d = run(s, m, resume, new Date(11_000));
    assert.deepEqual(ids(d.effects), ['tool-m1-1-c1', 'cmd:deadline-m1-1-c2']);
    const run0 = d.effects[0] as Extract<Effect, { kind: 'tool.run' }>;
    assert.deepEqual(run0.job, (original.effects.find((e) => e.kind === 'tool.run') as Extract<Effect, { kind: 'tool.run' }>).job);
    const deadline = d.effects[1] as Extract<Effect, { kind: 'session.command' }>;
    assert.equal(deadline.delay_ms, 20_000, '30 s timeout, 10 s already gone');
  });

  it('starts the queue head when nothing runs, and does nothing for an idle session', () => {
    const s: SessionState = { ...emptySessionState('s'), status: 'running', queued_message_ids: ['m9'] };
    assert.deepEqual(ids(run(s, new Map(), resume).effects), ['cmd:start-m9']);
    assert.deepEqual(run(emptySessionState('s'), new Map(), resume).effects, []);
  });

  it('re-issues of a replayed turn\'s effects only those the session still waits on', () => {
    const s = emptySessionState('s');
    const m = new Map<string, MessageState>();
    const start = run(s, m, um('m1'));
    const owed = (effects: Effect[], now = agent.now) => ids(stillOwed(effects, { session: s, messages: m, agent: { ...agent, now } }));
    assert.deepEqual(owed(start.effects), ['model-m1-1-0'], 'a redelivery right after the turn re-issues all of it');
    const answer: SessionCommand = {
      kind: 'model.responded', command_id: 'r1', message_id: 'm1', attempt: 1, call_index: 0,
      result: { ok: true, stop_reason: 'tool_use', usage: null, parts: [{ type: 'tool_call', id: 'c1', name: 'calc', arguments: { x: 1 } }, { type: 'tool_call', id: 'c2', name: 'ask', arguments: {} }] },
    };
    const tools = run(s, m, answer);
    assert.deepEqual(owed(start.effects), [], 'the first model call was answered');
    assert.deepEqual(owed(tools.effects), ids(tools.effects), 'while the tools run, all of that turn is owed');
    run(s, m, { kind: 'tool.completed', command_id: 't1', message_id: 'm1', attempt: 1, tool_call_id: 'c1', result: { ok: true, output: 2 } });
    assert.deepEqual(owed(tools.effects), ids(tools.effects).filter((id) => id !== 'tool-m1-1-c1'), 'the tool that ran is not run again; the deadline still waits');
    assert.ok(ids(tools.effects).includes('tool-m1-1-c1'));
  });
});
