import assert from 'node:assert/strict';
import { messageStatus, platform } from '../../src/domain/session/decision.js';
import type { ModelResult } from '../../src/domain/actors/session.js';
import { USER_ACTOR, type ContentBlock, type MessageState, type NewEvent } from '../../src/domain/ledger.js';

/**
 * What is appended to the ledger is typed by event type (src/domain/event-data.ts, derived from the schemas of
 * src/domain/event-schemas.ts). The checks that matter here are the compiler's: each `@ts-expect-error` line must
 * fail to compile, or the build fails (an unused expectation is an error), so a payload that stops being refused
 * breaks `npm run build` before any test runs.
 */
describe('ledger event data is typed by event type', () => {
  const m = { id: 'm1', status: 'running', attempt: 1 } as MessageState;

  it("builds each type's own data, and the build refuses another type's", () => {
    const changed = platform('session.status_changed', null, { from: 'idle', to: 'running' });
    assert.equal(changed.data.to, 'running');
    const failed = messageStatus(m, 'failed', { error: 'upstream 400' });
    assert.deepEqual(failed.data, { message_id: 'm1', from: 'running', to: 'failed', attempt: 1, error: 'upstream 400' });

    // @ts-expect-error: a session status change carries no reason
    platform('session.status_changed', null, { from: 'idle', to: 'running', reason: 'timeout' });
    // @ts-expect-error: a failed tool call says why (reason)
    platform('tool.call_failed', 'm1', { message_id: 'm1', tool_call_id: 'c1', tool_name: 't', kind: null, error: 'boom' });
    // @ts-expect-error: a failed call's reason is one of the schema's, not any string
    platform('tool.call_failed', 'm1', { message_id: 'm1', tool_call_id: 'c1', tool_name: 't', kind: null, reason: 'exploded', error: 'boom' });
    // @ts-expect-error: a completed call's kind is the schema's const, custom
    platform('tool.call_completed', 'm1', { message_id: 'm1', tool_call_id: 'c1', tool_name: 't', kind: 'external' });
    // @ts-expect-error: the schema's additionalProperties: false refuses a field it does not name
    platform('tool.result_submitted', 'm1', { message_id: 'm1', tool_call_id: 'c1', result: null, is_error: false, note: 'x' });
    // @ts-expect-error: a delivery failure counts its attempts with a number
    platform('webhook.delivery_failed', 'm1', { delivery_id: 'd', webhook_id: 'w', event_type: 'x', url: 'u', attempts: '3', last_error: 'e', reason: 'gone' });
    // @ts-expect-error: a status change's extra is an attempt, an error or a retry delay, not any field
    messageStatus(m, 'failed', { reason: 'x' });
    // @ts-expect-error: a user message's data is content, metadata and message_id, not a status change
    const wrong: NewEvent = { type: 'user.message', message_id: 'm1', source: 'user', actor: USER_ACTOR, data: { from: 'idle', to: 'running' } };
    void wrong;
  });

  it("types the writers' values as the schema does: content blocks, a model's parts and stop reason", () => {
    const content: ContentBlock[] = [{ type: 'text', text: 'hi' }, { type: 'file', file_id: 'file_1' }];
    const answer: ModelResult = { ok: true, parts: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: null };
    assert.equal(content.length + (answer.ok ? answer.parts.length : 0), 3);

    // @ts-expect-error: a text block has its text
    const noText: ContentBlock = { type: 'text' };
    // @ts-expect-error: a file block names its file
    const noFile: ContentBlock = { type: 'file', text: 'x' };
    // @ts-expect-error: a model answers with text and tool calls; tool results are the message's, not the model's
    const toolResult: ModelResult = { ok: true, parts: [{ type: 'tool_result', tool_call_id: 'c', tool_name: 't', content: [], is_error: false }], stop_reason: 'end_turn', usage: null };
    // @ts-expect-error: a stop reason is one of the schema's, not any string
    const stop: ModelResult = { ok: true, parts: [], stop_reason: 'end', usage: null };
    void [noText, noFile, toolResult, stop];
  });

  it('narrows data on type', () => {
    const events: NewEvent[] = [platform('session.status_changed', null, { from: 'running', to: 'idle' }), messageStatus(m, 'completed')];
    const to = events.map((e) => (e.type === 'message.status_changed' || e.type === 'session.status_changed' ? e.data.to : null));
    assert.deepEqual(to, ['idle', 'completed']);
  });
});
