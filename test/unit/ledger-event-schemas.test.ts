import assert from 'node:assert/strict';
import { decide } from '../../src/domain/session/decide.js';
import type { DecideInput } from '../../src/domain/session/decision.js';
import type { ModelResult, SessionCommand } from '../../src/domain/actors/session.js';
import { applyEvent, emptySessionState } from '../../src/domain/session/projection.js';
import { openApiDocument } from '../../clients/typescript/codegen/generate.js';
import { EVENT_TYPES, type EventEnvelope, type MessageState } from '../../src/domain/ledger.js';
import type { ToolDef } from '../../src/domain/agent.js';
import { componentValidator } from '../support/openapi-schemas.js';

const tool = (name: string, kind: ToolDef['kind']): ToolDef => ({ name, kind, path: `tools/${name}`, timeout_seconds: 30, description: null, input_schema: null, output_schema: null });

const agent: DecideInput['agent'] = {
  org_id: 'o',
  agent_id: 'a',
  agent_deleted: false,
  batch_id: null,
  tools: new Map([tool('ext', 'external'), tool('cus', 'custom'), { ...tool('ask', 'custom'), permission: 'always_ask' as const }].map((t) => [t.name, t])),
  max_turns: 10,
  max_attempts: 2,
  now: new Date(0),
  submit_url: 'http://x/v1/sessions/s/events',
  validate_output: () => null,
};

const calls = (...names: string[]): ModelResult => ({ ok: true, parts: names.map((name, i) => ({ type: 'tool_call', id: `c_${name}_${i}`, name, arguments: { i } })), stop_reason: 'tool_use', usage: { input_tokens: 3, output_tokens: 4 } });
const text: ModelResult = { ok: true, parts: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn', usage: null };

/**
 * Every path of the session decision that writes an event, judged by the
 * document's per-type schemas after the JSON round trip the ledger does: a
 * decision that writes a field the document does not name (or drops one it
 * requires) fails here before any integration run.
 */
describe('ledger events the session decision writes match /v1/openapi.json', () => {
  it('for every event type and every tool outcome', () => {
    const problem = componentValidator(openApiDocument() as never);
    const session = emptySessionState('s');
    const messages = new Map<string, MessageState>();
    const written: EventEnvelope[] = [];
    let n = 0;
    let as = agent;
    const run = (cmd: Record<string, unknown>) => {
      const d = decide({ session, messages, agent: as }, { command_id: `cmd-${++n}`, ...cmd } as SessionCommand);
      for (const e of d.events) {
        const seq = session.last_sequence + 1;
        const ev = JSON.parse(JSON.stringify({ ...e, id: `s:${seq}`, session_id: 's', sequence_number: seq, created_at: new Date(seq * 1000).toISOString() })) as EventEnvelope;
        applyEvent(session, messages, ev);
        written.push(ev);
      }
    };
    const pending = (mid: string, name: string) => messages.get(mid)!.pending_tool_calls.find((c) => c.name === name)!.id;

    // m1: an external call answered, a custom one completed, an unknown one failed, then the final answer.
    run({ kind: 'user.message', message_id: 'm1', content: [{ type: 'text', text: 'hi' }], metadata: { team: 'blue' } });
    run({ kind: 'model.responded', message_id: 'm1', attempt: 1, call_index: 0, result: calls('ext', 'cus', 'nope') });
    run({ kind: 'tool.completed', message_id: 'm1', attempt: 1, tool_call_id: pending('m1', 'cus'), result: { ok: true, output: { sum: 3 } } });
    run({ kind: 'tool.result_submitted', message_id: 'm1', tool_call_id: pending('m1', 'ext'), result: null, is_error: true });
    // The final answer's cost took the session's budget past 80%: recorded with the answer.
    const threshold = { scope: 'session', id: 's', threshold: 80, amount_usd: 1, period: 'total', spent_usd: 0.85, resets_at: null };
    run({ kind: 'model.responded', message_id: 'm1', attempt: 1, call_index: 1, result: { ...text, budget_thresholds: [threshold] } });
    // m2: a retryable failure, then a second one past max_attempts.
    run({ kind: 'user.message', message_id: 'm2', content: [{ type: 'file', file_id: 'file_1' }], metadata: null });
    run({ kind: 'model.responded', message_id: 'm2', attempt: 1, call_index: 0, result: { ok: false, error: 'HTTP 503', retryable: true } });
    run({ kind: 'model.responded', message_id: 'm2', attempt: 2, call_index: 0, result: { ok: false, error: 'budget_exceeded: spent', retryable: false, code: 'budget_exceeded' } });
    // m3: an external call past its deadline, a custom one that throws, then cancelled with another still running.
    run({ kind: 'user.message', message_id: 'm3', content: [{ type: 'text', text: 'go' }], metadata: null });
    run({ kind: 'model.responded', message_id: 'm3', attempt: 1, call_index: 0, result: calls('ext', 'cus', 'cus') });
    run({ kind: 'tool.deadline_passed', message_id: 'm3', attempt: 1, tool_call_id: pending('m3', 'ext') });
    run({ kind: 'tool.completed', message_id: 'm3', attempt: 1, tool_call_id: pending('m3', 'cus'), result: { ok: false, error: 'boom' } });
    run({ kind: 'message.cancel', message_id: 'm3' });
    // m4: two always_ask calls, one allowed and one denied (issue #33 item 1).
    run({ kind: 'user.message', message_id: 'm4', content: [{ type: 'text', text: 'ask' }], metadata: null });
    run({ kind: 'model.responded', message_id: 'm4', attempt: 1, call_index: 0, result: calls('ask', 'ask') });
    const [a1, a2] = messages.get('m4')!.pending_tool_calls.map((c) => c.id);
    run({ kind: 'tool.confirmation', message_id: 'm4', tool_call_id: a1, result: 'allow' });
    run({ kind: 'tool.confirmation', message_id: 'm4', tool_call_id: a2, result: 'deny', deny_message: 'no' });
    run({ kind: 'message.cancel', message_id: 'm4' });
    run({ kind: 'webhook.delivery_failed', message_id: 'm3', delivery: { delivery_id: 'whd_1', webhook_id: 's:m3:c', event_type: 'tool.call_requested', url: 'https://hooks.test/x', attempts: 3, last_error: 'HTTP 500', reason: 'retries_exhausted' } });
    // m5, a code agent's: a step with an emit, a model call, a tool and a sleep in parallel; a failed model call; the answer.
    as = { ...agent, code: true };
    run({ kind: 'user.message', message_id: 'm5', content: [{ type: 'text', text: 'code' }], metadata: null });
    const calls4 = [
      { position: 1, kind: 'model', name: 'default', arguments: { input: 'x' } },
      { position: 2, kind: 'tool', name: 'cus', arguments: { a: 1 } },
      { position: 3, kind: 'sleep', name: 'sleep', arguments: { ms: 5 } },
    ];
    run({ kind: 'agent.stepped', message_id: 'm5', attempt: 1, at: 0, outcome: { kind: 'suspend', emits: [{ position: 0, text: 'go' }], calls: calls4 } });
    run({ kind: 'agent.call_done', message_id: 'm5', attempt: 1, position: 1, result: { ok: true, output: { text: 'hi' } } });
    run({ kind: 'tool.completed', message_id: 'm5', attempt: 1, tool_call_id: 'ctx_2', result: { ok: true, output: 2 } });
    run({ kind: 'agent.call_done', message_id: 'm5', attempt: 1, position: 3, result: { ok: true, output: null } });
    run({ kind: 'agent.stepped', message_id: 'm5', attempt: 1, at: 4, outcome: { kind: 'suspend', emits: [], calls: [{ position: 4, kind: 'model', name: 'default', arguments: {} }] } });
    run({ kind: 'agent.call_done', message_id: 'm5', attempt: 1, position: 4, result: { ok: false, error: 'HTTP 400' } });
    run({ kind: 'agent.stepped', message_id: 'm5', attempt: 1, at: 5, outcome: { kind: 'done', emits: [], answer: 'fin' } });
    assert.equal(messages.get('m5')!.status, 'completed');

    for (const ev of written) assert.equal(problem('LedgerEvent', ev), null, `${ev.type}: ${JSON.stringify(ev.data)}`);
    assert.deepEqual([...new Set(written.map((e) => e.type))].sort(), [...EVENT_TYPES].sort());
    const failed = written.filter((e) => e.type === 'tool.call_failed').map((e) => e.data.reason);
    assert.deepEqual([...new Set(failed)].sort(), ['cancelled', 'denied', 'error', 'timeout', 'unknown_tool']);
    assert.deepEqual(written.filter((e) => e.type === 'message.status_changed').filter((e) => ['failed', 'cancelled', 'completed'].includes(e.data.to)).map((e) => e.data.to), ['completed', 'failed', 'cancelled', 'cancelled', 'completed']);
  });
});
