import assert from 'node:assert/strict';
import { firstTurn } from '../../src/app/batches/first-turn.js';
import { batchProgress, batchStatus, childState, countChildren, deletedChildStatus, itemState, terminalWebhookType, type ChildState } from '../../src/domain/batch-status.js';
import type { AgentVersionDoc } from '../../src/store/agents.js';
import type { SessionDoc } from '../../src/domain/views/session.js';

describe('batch status (DESIGN §6)', () => {
  const cases: [ChildState[], string][] = [
    [['queued', 'queued'], 'queued'],
    [['queued', 'rejected'], 'queued'],
    [['queued', 'running'], 'running'],
    [['queued', 'completed'], 'running'],
    [['queued', 'failed'], 'running'],
    [['running', 'completed', 'failed'], 'running'],
    [['completed', 'completed'], 'completed'],
    [['failed', 'failed'], 'failed'],
    [['rejected', 'rejected'], 'failed'],
    [['rejected', 'failed'], 'failed'],
    [['completed', 'failed'], 'partial_failed'],
    [['completed', 'rejected'], 'partial_failed'],
  ];
  for (const [states, expected] of cases) {
    it(`${states.join(', ')} → ${expected}`, () => assert.equal(batchStatus(states), expected));
  }

  it('maps message statuses to child states; cancelled counts as failed', () => {
    assert.equal(childState(null), 'queued');
    assert.equal(childState('queued'), 'queued');
    assert.equal(childState('running'), 'running');
    assert.equal(childState('requires_action'), 'running');
    assert.equal(childState('completed'), 'completed');
    assert.equal(childState('failed'), 'failed');
    assert.equal(childState('cancelled'), 'failed');
  });

  it('counts rejected items as failed', () => {
    assert.deepEqual(countChildren(['queued', 'running', 'completed', 'failed', 'rejected']), { queued: 1, running: 1, completed: 1, failed: 2 });
  });

  it("reads an item from its session when it is there, else as its deleted child's settlement said, else cancelled", () => {
    const s = (last: string | null) => ({ last_message_status: last });
    assert.equal(itemState({ created: false, session: null, settled: null }), 'rejected');
    assert.equal(itemState({ created: true, session: s('queued'), settled: null }), 'queued');
    // The session is the source of truth while it exists: a child counted once may run a later message.
    assert.equal(itemState({ created: true, session: s('running'), settled: 'completed' }), 'running');
    assert.equal(itemState({ created: true, session: null, settled: 'completed' }), 'completed');
    assert.equal(itemState({ created: true, session: null, settled: 'cancelled' }), 'failed');
    // Deleted before its settlement was recorded: it runs nothing more, so it is terminal, as a cancel.
    assert.equal(deletedChildStatus(null), 'cancelled');
    assert.equal(itemState({ created: true, session: null, settled: null }), 'failed');
    assert.deepEqual(batchProgress(['completed', 'failed', 'rejected']), { status: 'partial_failed', counts: { queued: 0, running: 0, completed: 1, failed: 2 } });
  });

  it('names a webhook type only for terminal statuses', () => {
    assert.equal(terminalWebhookType('completed'), 'batch.completed');
    assert.equal(terminalWebhookType('failed'), 'batch.failed');
    assert.equal(terminalWebhookType('partial_failed'), 'batch.partial_failed');
    assert.equal(terminalWebhookType('running'), null);
    assert.equal(terminalWebhookType('queued'), null);
  });
});

describe('batch first turn', () => {
  const doc = {
    _id: 'ses_01', org_id: 'org_1', agent_id: 'agt_1', version_id: 'ver_1', name: null, storage_binding_id: null, llm_id: 'main', internet_access: false,
    metadata: { k: 'v' }, secrets: null, llm_api_key: null, batch_id: 'bat_1', priority: 'batch', created_at: new Date(0),
    status: 'idle', last_sequence: 0, last_message_id: null, last_message_status: null, running_message_id: null, queued_message_ids: [], recent_commands: [],
  } as SessionDoc;

  const version = { _id: 'ver_1', org_id: 'org_1', tools: [], agent_config: null } as unknown as AgentVersionDoc;

  it("is the session actor's own decision, with the start deferred to a turn of its own", () => {
    const t = firstTurn(doc, version, 'http://x', 'msg_1', [{ type: 'text', text: 'hi' }], new Date(1000));
    assert.deepEqual(t.events.map((e) => [e._id, e.type]), [['ses_01:1', 'user.message'], ['ses_01:2', 'message.status_changed'], ['ses_01:3', 'session.status_changed']]);
    assert.equal(t.events[0].command_id, 'um-msg_1');
    assert.deepEqual(JSON.parse(t.events[0].effects_json!), [{ kind: 'session.command', command: { kind: 'message.start', command_id: 'start-msg_1', message_id: 'msg_1' } }]);
    assert.deepEqual(t.effects, [{ kind: 'session.command', command: { kind: 'message.start', command_id: 'start-msg_1', message_id: 'msg_1' } }]);
    assert.equal(t.events[1].command_id, undefined);
    assert.equal(t.session.status, 'running');
    assert.equal(t.session.last_sequence, 3);
    assert.equal(t.session.last_message_id, 'msg_1');
    assert.equal(t.session.last_message_status, 'queued');
    assert.deepEqual(t.session.queued_message_ids, ['msg_1']);
    assert.deepEqual(t.session.recent_commands, [{ id: 'um-msg_1', seq: 1 }]);
    assert.equal(t.session.batch_id, 'bat_1');
    assert.equal(t.message._id, 'msg_1');
    assert.equal(t.message.status, 'queued');
    assert.equal(t.message.sequence_number, 1);
    assert.equal(t.message.org_id, 'org_1');
  });
});
