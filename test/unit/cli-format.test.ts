import assert from 'node:assert/strict';
import { describeEvent } from '../../clients/cli/format.js';
import type { EventOf } from '../../clients/typescript/src/stream.js';

const place = { id: 'ses_1:7', session_id: 'ses_1', sequence_number: 7, message_id: 'msg_1', source: 'platform', actor: { type: 'system', id: null }, created_at: '2026-11-24T21:00:07.000Z' } as const;

describe('troupe tail: one line per event', () => {
  it('shows a custom tool that returned nothing (its data has no output) instead of failing on it', () => {
    const done: EventOf<'tool.call_completed'> = { ...place, type: 'tool.call_completed', data: { message_id: 'msg_1', tool_call_id: 'c1', tool_name: 'lookup', kind: 'custom' } };
    assert.equal(describeEvent(done), '#7    21:00:07  tool       lookup → (nothing)');
    assert.equal(describeEvent({ ...done, data: { ...done.data, output: { n: 1 } } }), '#7    21:00:07  tool       lookup → {"n":1}');
  });

  it('reads each type through narrowing: a status change, a failed call, a delta', () => {
    assert.equal(describeEvent({ ...place, type: 'message.status_changed', data: { message_id: 'msg_1', from: 'running', to: 'failed', attempt: 1, error: 'upstream 400' } }), '#7    21:00:07  message    msg_1 running → failed: upstream 400');
    assert.equal(describeEvent({ ...place, type: 'tool.call_failed', data: { message_id: 'msg_1', tool_call_id: 'c1', tool_name: 'x', kind: null, reason: 'unknown_tool', error: 'no tool x' } }), '#7    21:00:07  tool       x failed (unknown_tool): no tool x');
    assert.equal(describeEvent({ type: 'assistant.delta', data: { type: 'assistant.delta', message_id: 'msg_1', call_index: 0, text: 'Hel' } }), 'Hel');
  });
});
