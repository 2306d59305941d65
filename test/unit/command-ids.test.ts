import assert from 'node:assert/strict';
import {
  deadlinePassed,
  deliveryFailed,
  messageCancel,
  messageQuarantine,
  messageStart,
  modelAnswerCommandId,
  modelCallJobId,
  sessionDelete,
  sessionJobId,
  sessionResume,
  toolResultCommandId,
  userMessageCommandId,
} from '../../src/domain/actors/session.js';

/**
 * Command and job ids are how a resent command is recognised (recent_commands, BullMQ job ids): a builder that
 * spelled an id differently after an upgrade would make a replayed command a new one. So each builder's output for a
 * fixed input is pinned here as a literal, digests included (sha256 of the Idempotency-Key, first 32 hex digits).
 */
describe('session command ids are byte-for-byte stable', () => {
  it('user messages: the message id, or the digest of the Idempotency-Key', () => {
    assert.equal(userMessageCommandId('msg_1'), 'um-msg_1');
    assert.equal(userMessageCommandId('msg_1', null), 'um-msg_1');
    assert.equal(userMessageCommandId('msg_1', 'key-1'), 'um-be2974546978e3739e6d6da85c4be9f3');
  });

  it('tool results: the digest of the Idempotency-Key, else a fresh id each time', () => {
    assert.equal(toolResultCommandId('key-1'), 'tr-be2974546978e3739e6d6da85c4be9f3');
    const a = toolResultCommandId(null);
    assert.match(a, /^tr-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.notEqual(toolResultCommandId(null), a);
  });

  it('cancel, delete, resume, start, deadline, quarantine, delivery failure', () => {
    assert.deepEqual(messageCancel('msg_1'), { kind: 'message.cancel', command_id: 'cancel-msg_1', message_id: 'msg_1' });
    assert.deepEqual(sessionDelete({ request: 'req_1' }), { kind: 'session.delete', command_id: 'delete-req_1' });
    assert.deepEqual(sessionDelete({ retention: '2026-01-01' }), { kind: 'session.delete', command_id: 'retention-2026-01-01' });
    assert.deepEqual(sessionResume(42), { kind: 'session.resume', command_id: 'resume-42' });
    assert.deepEqual(messageStart('msg_1'), { kind: 'message.start', command_id: 'start-msg_1', message_id: 'msg_1' });
    assert.deepEqual(deadlinePassed({ id: 'msg_1', attempt: 2 }, 'call_1'), {
      kind: 'tool.deadline_passed',
      command_id: 'deadline-msg_1-2-call_1',
      message_id: 'msg_1',
      attempt: 2,
      tool_call_id: 'call_1',
    });
    assert.equal(messageQuarantine({ command_id: 'um-msg_1' }, 'msg_1', 'poison').command_id, 'quarantine-um-msg_1');
    const delivery = { delivery_id: 'dlv_1', webhook_id: 'wh_1', event_type: 'message.completed', url: 'https://h', attempts: 3, last_error: 'e', reason: 'gone' } as Parameters<typeof deliveryFailed>[1];
    assert.equal(deliveryFailed('msg_1', delivery).command_id, 'whf-dlv_1');
  });

  it('model calls and their answers, and session job ids', () => {
    const call = { message_id: 'msg_1', attempt: 1, call_index: 3 };
    assert.equal(modelCallJobId(call), 'model-msg_1-1-3');
    assert.equal(modelAnswerCommandId(call), 'resp-msg_1-1-3');
    assert.equal(sessionJobId('ses_1', 'cancel-msg_1'), 'ses_1.cancel-msg_1');
    assert.equal(sessionJobId('ses_1', 'a:b'), 'ses_1.a_b');
  });
});
