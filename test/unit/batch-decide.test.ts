import assert from 'node:assert/strict';
import { admit, afterCount, needsTicket } from '../../actors/batch/decide.js';
import { afterLostClaim, terminalOf, terminalStep, terminalWebhook, type Header } from '../../src/app/batches/terminal-step.js';
import type { BatchChildSettled } from '../../src/domain/actors/batch.js';
import { WEBHOOKS, webhookJobId } from '../../src/domain/actors/webhook.js';

type Counted = Header & { settled: number; created_count: number };

const header = (over: Partial<Counted> = {}): Counted => ({
  _id: 'bat_1',
  org_id: 'org_1',
  agent_id: 'agt_1',
  state: 'ready',
  chunk_count: 1,
  settled: 0,
  created_count: 3,
  terminal_fired: false,
  terminal_type: null,
  terminal_enqueued: false,
  ...over,
});
const job: BatchChildSettled = { org_id: 'org_1', batch_id: 'bat_1', session_id: 'ses_a', message_id: 'msg_1', status: 'failed' };

describe('batch actor decisions', () => {
  describe('admit', () => {
    it('drops a report for an unknown batch', () => {
      assert.deepEqual(admit(null, job), { kind: 'drop' });
    });

    it("drops a report naming another org's batch", () => {
      assert.deepEqual(admit(header({ org_id: 'org_2' }), job), { kind: 'drop' });
    });

    it('records the child once, keyed by session id, uncounted, with the header counter as the ticket hint', () => {
      const a = admit(header({ settled: 2 }), job);
      assert.equal(a.kind, 'count');
      if (a.kind !== 'count') return;
      assert.deepEqual(a.settlement, { _id: 'ses_a', batch_id: 'bat_1', status: 'failed', counted: false });
      assert.equal(a.hint, 2);
    });
  });

  it('takes a ticket for an existing settlement only while it is uncounted (a crash between insert and ticket)', () => {
    assert.equal(needsTicket({ counted: false }), true);
    assert.equal(needsTicket({ counted: true }), false);
    assert.equal(needsTicket(null), true);
  });

  describe('afterCount', () => {
    it('stays quiet below the number of children', () => {
      assert.deepEqual(afterCount(header(), { fresh: true, ticket: 2 }), { outcome: 'counted', check: false });
    });

    it('checks at or above the number of children (a ticket counted twice after a crash runs ahead)', () => {
      assert.deepEqual(afterCount(header(), { fresh: true, ticket: 3 }), { outcome: 'counted', check: true });
      assert.deepEqual(afterCount(header(), { fresh: true, ticket: 4 }), { outcome: 'counted', check: true });
    });

    it('checks on a duplicate when the header says all settled: the first delivery may have died before firing', () => {
      assert.deepEqual(afterCount(header({ settled: 3 }), { fresh: false, ticket: null }), { outcome: 'duplicate', check: true });
      assert.deepEqual(afterCount(header({ settled: 1 }), { fresh: false, ticket: null }), { outcome: 'duplicate', check: false });
    });

    it('checks when the terminal was claimed but maybe not enqueued, and never once it was enqueued', () => {
      assert.deepEqual(afterCount(header({ terminal_fired: true }), { fresh: false, ticket: null }), { outcome: 'duplicate', check: true });
      assert.deepEqual(afterCount(header({ terminal_fired: true, terminal_enqueued: true, settled: 9 }), { fresh: true, ticket: 9 }), { outcome: 'counted', check: false });
    });
  });

  describe('terminalStep', () => {
    it('does nothing once enqueued, or while the batch is still being created', () => {
      assert.deepEqual(terminalStep(header({ terminal_enqueued: true, terminal_fired: true, terminal_type: 'batch.failed' })), { kind: 'none' });
      assert.deepEqual(terminalStep(header({ state: 'creating' })), { kind: 'none' });
    });

    it('fires the type already claimed without reading the children again', () => {
      assert.deepEqual(terminalStep(header({ terminal_fired: true, terminal_type: 'batch.completed', state: 'creating' })), { kind: 'fire', type: 'batch.completed' });
    });

    it('reads the children of a ready batch', () => {
      assert.deepEqual(terminalStep(header()), { kind: 'read_children' });
      assert.deepEqual(terminalStep(header({ terminal_fired: true })), { kind: 'read_children' }, 'claimed without a type: decide again');
    });
  });

  describe('terminalOf', () => {
    it('is null while any item is queued or running, whatever the counters say', () => {
      assert.equal(terminalOf(['completed', 'running']), null);
      assert.equal(terminalOf(['completed', 'queued', 'rejected']), null);
    });

    it('is null for a batch without items', () => {
      assert.equal(terminalOf([]), null);
    });

    it('names the type with the counts it was decided from; a rejected item counts as failed', () => {
      assert.deepEqual(terminalOf(['completed', 'completed']), { type: 'batch.completed', counts: { queued: 0, running: 0, completed: 2, failed: 0 } });
      assert.deepEqual(terminalOf(['completed', 'completed', 'rejected']), { type: 'batch.partial_failed', counts: { queued: 0, running: 0, completed: 2, failed: 1 } });
      assert.deepEqual(terminalOf(['failed', 'failed']), { type: 'batch.failed', counts: { queued: 0, running: 0, completed: 0, failed: 2 } });
      assert.equal(terminalOf(['rejected'])?.type, 'batch.failed', 'every item rejected');
    });
  });

  it('after a lost claim, enqueues the type the winner decided unless it is enqueued or the batch is gone', () => {
    assert.equal(afterLostClaim({ terminal_type: 'batch.failed', terminal_enqueued: false }, 'batch.completed'), 'batch.failed');
    assert.equal(afterLostClaim({ terminal_type: null, terminal_enqueued: false }, 'batch.completed'), 'batch.completed');
    assert.equal(afterLostClaim({ terminal_type: 'batch.failed', terminal_enqueued: true }, 'batch.failed'), null);
    assert.equal(afterLostClaim(null, 'batch.failed'), null);
  });

  it('addresses the terminal webhook with a deterministic job id, so a second enqueue is one job', () => {
    const send = terminalWebhook(header(), 'batch.partial_failed');
    const data = { kind: 'batch.lifecycle', org_id: 'org_1', agent_id: 'agt_1', batch_id: 'bat_1', type: 'batch.partial_failed' } as const;
    assert.deepEqual(send, { to: WEBHOOKS, name: 'batch.lifecycle', data, job_id: webhookJobId(data) });
    assert.deepEqual(terminalWebhook(header(), 'batch.partial_failed'), send);
  });
});
