import assert from 'node:assert/strict';
import type { Effect, SessionCommand } from '../../src/domain/actors/session.js';
import type { EventEnvelope, MessageState, SessionState } from '../../src/domain/ledger.js';
import { decide } from '../../src/domain/session/decide.js';
import type { DecideInput } from '../../src/domain/session/decision.js';
import { effectSends } from '../../src/domain/session/effects.js';
import { outstanding } from '../../src/domain/session/outstanding.js';
import { applyEvent, emptySessionState } from '../../src/domain/session/projection.js';
import type { ToolDef } from '../../src/domain/agent.js';

/**
 * Replay deduplication rests on one fact: the effects a turn's decision
 * issues and those `outstanding` derives again from the state it leaves (the
 * sweeper's resume, a replay's `stillOwed`) are sent under the same job ids.
 * Each kind `outstanding` derives is checked here, as the runtime would send it.
 */
const tools = new Map<string, ToolDef>([
  ['calc', { name: 'calc', kind: 'custom', path: 'calc.js', timeout_seconds: 60, description: null, input_schema: null, output_schema: null }],
  ['ask', { name: 'ask', kind: 'external', path: 'ask.json', timeout_seconds: 30, description: null, input_schema: null, output_schema: null }],
]);
const agent: DecideInput['agent'] = { org_id: 'o', agent_id: 'a', agent_deleted: false, batch_id: null, tools, max_turns: 10, max_attempts: 3, now: new Date(1000), submit_url: 'http://x', validate_output: () => null };
const sender = { _id: 'ses_1', org_id: 'o', batch_id: null, agent_id: 'a', version_id: 'v', llm_id: 'l', status: 'running' as const, last_message_status: null, metadata: {}, priority: 'interactive' as const };

function harness() {
  const session: SessionState = emptySessionState('ses_1');
  const messages = new Map<string, MessageState>();
  const run = (cmd: SessionCommand) => {
    const d = decide({ session, messages, agent }, cmd);
    for (const e of d.events) {
      const seq = session.last_sequence + 1;
      applyEvent(session, messages, { ...e, id: `ses_1:${seq}`, session_id: 'ses_1', sequence_number: seq, created_at: `t${seq}` } as EventEnvelope);
    }
    return d.effects;
  };
  /** The job ids the runtime would send `effects` under, by effect kind (the kinds `outstanding` derives). */
  const jobIds = (effects: Effect[]) => {
    const owed = effects.filter((e) => e.kind === 'model.call' || e.kind === 'tool.run' || e.kind === 'session.command');
    return effectSends(sender, owed).map((s, i) => `${owed[i].kind}${owed[i].kind === 'session.command' ? `/${s.name}` : ''} ${s.to.name} ${s.job_id}`);
  };
  const derived = () => jobIds(outstanding({ session, messages, agent }));
  return { run, jobIds, derived };
}

const um = (id: string, start?: 'deferred'): SessionCommand => ({ kind: 'user.message', command_id: `um-${id}`, message_id: id, content: [{ type: 'text', text: id }], metadata: null, ...(start ? { start } : {}) });
const calls = (callIndex: number, attempt: number, ...names: string[]): SessionCommand => ({
  kind: 'model.responded', command_id: `r${attempt}-${callIndex}`, message_id: 'm1', attempt, call_index: callIndex,
  result: { ok: true, stop_reason: 'tool_use', usage: null, parts: names.map((name, i) => ({ type: 'tool_call' as const, id: `c${callIndex}${i}`, name, arguments: { i } })) },
});

describe('effect job ids: a decision and outstanding derive the same', () => {
  it('message.start: a deferred message waits for its start under one job id', () => {
    const h = harness();
    const issued = h.jobIds(h.run(um('m1', 'deferred')));
    assert.deepEqual(issued, ['session.command/message.start session ses_1.start-m1']);
    assert.deepEqual(h.derived(), issued);
  });

  it('model.call: the first call, the call after a tool result and the call of a retried attempt', () => {
    const h = harness();
    const first = h.jobIds(h.run(um('m1')));
    assert.deepEqual(first, ['model.call router-proxy model-m1-1-0']);
    assert.deepEqual(h.derived(), first);
    h.run(calls(0, 1, 'calc'));
    const next = h.jobIds(h.run({ kind: 'tool.completed', command_id: 't', message_id: 'm1', attempt: 1, tool_call_id: 'c00', result: { ok: true, output: 1 } }));
    assert.deepEqual(next, ['model.call router-proxy model-m1-1-1']);
    assert.deepEqual(h.derived(), next);
    const retried = h.jobIds(h.run({ kind: 'model.responded', command_id: 'r', message_id: 'm1', attempt: 1, call_index: 1, result: { ok: false, error: 'busy', retryable: true } }));
    assert.deepEqual(retried, ['model.call router-proxy model-m1-2-1']);
    assert.deepEqual(h.derived(), retried);
  });

  it('tool.run and tool.deadline_passed: custom tool runs and external tool deadlines of one model answer', () => {
    const h = harness();
    h.run(um('m1'));
    const issued = h.jobIds(h.run(calls(0, 1, 'calc', 'ask', 'calc')));
    assert.deepEqual(issued, ['tool.run tool-runner tool-m1-1-c00', 'session.command/tool.deadline_passed session ses_1.deadline-m1-1-c01', 'tool.run tool-runner tool-m1-1-c02']);
    assert.deepEqual([...h.derived()].sort(), [...issued].sort());
  });

  it('a queued message started by the one before it is derived as its model call', () => {
    const h = harness();
    h.run(um('m1'));
    h.run(um('m2'));
    const next = h.jobIds(h.run({ kind: 'message.cancel', command_id: 'c', message_id: 'm1' }));
    assert.deepEqual(next, ['model.call router-proxy model-m2-1-0']);
    assert.deepEqual(h.derived(), next);
  });
});
