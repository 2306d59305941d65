import assert from 'node:assert/strict';
import { afterRedelivery, attemptResult, buildBody, eventType, failureReport, INFRA_RETRIES, infraRetry, redeliverable, retryJob, retryStep, settle, subscribed, type EventJob, type Target } from '../../actors/webhook/decide.js';
import { SESSION, sessionJobId } from '../../src/domain/actors/session.js';
import type { AttemptOutcome } from '../../actors/webhook/send.js';
import type { ToolCallRequestedBody } from '../../src/domain/actors/webhook.js';
import type { SessionDoc } from '../../src/domain/views/session.js';
import type { WebhookDeliveryDoc } from '../../src/domain/views/webhook-delivery.js';

const target = (over: Partial<Target> = {}): Target => ({ url: 'https://hooks.example/x', event_types: ['session.completed', 'tool.call_requested'], secrets: ['s1'], disabled: false, ...over });
const outcome = (over: Partial<AttemptOutcome> = {}): AttemptOutcome => ({ ok: false, status_code: 500, error: 'HTTP 500', retry_after_ms: null, gone: false, refused: false, duration_ms: 3, ...over });
const OK = outcome({ ok: true, status_code: 200, error: null });
const GONE = outcome({ status_code: 410, error: 'HTTP 410', gone: true });
const delivery = (over: Partial<WebhookDeliveryDoc> = {}) => ({ _id: 'dlv_1', event_id: 'ses_1:msg_1:session.completed', event_type: 'session.completed', session_id: 'ses_1', message_id: 'msg_1', body: '{}', status: 'pending', attempt_count: 2, next_attempt_at: new Date(5000), ...over }) as WebhookDeliveryDoc;
const job: EventJob = { kind: 'session.lifecycle', org_id: 'org_1', agent_id: 'agt_1', session_id: 'ses_1', message_id: 'msg_1', type: 'session.completed' };

describe('webhook actor decisions', () => {
  it('sends an event only to an enabled webhook subscribed to its type', () => {
    assert.equal(eventType(job), 'session.completed');
    assert.equal(subscribed(target(), 'session.completed'), true);
    assert.equal(subscribed(target(), 'session.failed'), false);
    assert.equal(subscribed(target({ disabled: true }), 'session.completed'), false);
    assert.equal(subscribed(null, 'session.completed'), false);
  });

  it('labels each attempt for the metrics', () => {
    assert.deepEqual([OK, GONE, outcome({ refused: true }), outcome()].map(attemptResult), ['succeeded', 'gone', 'refused', 'failed']);
  });

  describe('buildBody', () => {
    const at = new Date('2026-01-02T03:04:05.000Z');
    const s = { _id: 'ses_1', org_id: 'org_1', batch_id: null, agent_id: 'agt_1', version_id: 'ver_1', llm_id: 'main', status: 'idle', last_message_status: 'completed', metadata: { team: 'a' } } as unknown as SessionDoc;

    it('sends a tool call request exactly as the session built it, reading nothing', () => {
      const body = { id: 'evt_1', type: 'tool.call_requested', session_id: 'ses_1', message_id: 'msg_1' } as ToolCallRequestedBody;
      const built = buildBody({ kind: 'tool.call_requested', org_id: 'org_1', agent_id: 'agt_1', session_id: 'ses_1', body }, {}, at);
      assert.deepEqual(built, { event_id: 'evt_1', event_type: 'tool.call_requested', session_id: 'ses_1', message_id: 'msg_1', batch_id: null, body: JSON.stringify(body) });
    });

    it("carries the session's fields as read, with a stable id; nothing for a session gone or another org's", () => {
      const built = buildBody(job, { session: s }, at)!;
      assert.deepEqual(JSON.parse(built.body), {
        id: 'ses_1:msg_1:session.completed',
        type: 'session.completed',
        created_at: '2026-01-02T03:04:05.000Z',
        data: { session_id: 'ses_1', batch_id: null, agent_id: 'agt_1', version_id: 'ver_1', llm_id: 'main', status: 'idle', last_message_status: 'completed', metadata: { team: 'a' } },
      });
      assert.equal(buildBody(job, { session: null }, at), null);
      assert.equal(buildBody(job, { session: { ...s, org_id: 'org_2' } }, at), null);
    });

    it('reports a batch’s terminal status, with counts null while the batch is not readable yet', () => {
      const b = { kind: 'batch.lifecycle', org_id: 'org_1', agent_id: 'agt_1', batch_id: 'bat_1', type: 'batch.partial_failed' } as const;
      const read = JSON.parse(buildBody(b, { batch: { counts: { completed: 1, failed: 1 } } }, at)!.body) as { data: unknown };
      assert.deepEqual(read.data, { batch_id: 'bat_1', agent_id: 'agt_1', status: 'partial_failed', counts: { completed: 1, failed: 1 } });
      assert.deepEqual((JSON.parse(buildBody(b, { batch: null }, at)!.body) as { data: { counts: unknown } }).data.counts, null);
    });
  });

  describe('retryStep', () => {
    it('stops when the delivery is gone or ended meanwhile (a redelivery succeeded, or a 410)', () => {
      assert.deepEqual(retryStep(null, target()), { kind: 'done' });
      assert.deepEqual(retryStep(delivery({ status: 'succeeded' }), target()), { kind: 'done' });
      assert.deepEqual(retryStep(delivery({ status: 'disabled' }), target({ disabled: true })), { kind: 'done' });
    });

    it('ends a pending delivery whose webhook was removed, disabled or unsubscribed, saying which', () => {
      assert.deepEqual(retryStep(delivery(), null), { kind: 'abandon', delivery_id: 'dlv_1', status: 'failed', reason: 'webhook configuration removed', code: 'config_deleted' });
      assert.deepEqual(retryStep(delivery(), target({ disabled: true })), { kind: 'abandon', delivery_id: 'dlv_1', status: 'disabled', reason: 'webhook disabled', code: 'disabled' });
      assert.deepEqual(retryStep(delivery(), target({ event_types: ['tool.call_requested'] })), { kind: 'abandon', delivery_id: 'dlv_1', status: 'failed', reason: 'webhook no longer subscribed to session.completed', code: 'unsubscribed' });
    });

    it('ends a tool call delivery past its expires_at instead of sending it, and sends it before', () => {
      const d = delivery({ event_type: 'tool.call_requested', body: JSON.stringify({ expires_at: '2026-01-01T00:00:10.000Z' }) });
      const at = Date.parse('2026-01-01T00:00:10.000Z');
      assert.deepEqual(retryStep(d, target(), at), { kind: 'abandon', delivery_id: 'dlv_1', status: 'failed', reason: 'tool call expired at 2026-01-01T00:00:10.000Z', code: 'expired' });
      assert.equal(retryStep(d, null, at + 1).kind, 'abandon');
      assert.equal(retryStep(d, target(), at - 1).kind, 'send');
      assert.equal(retryStep(delivery({ body: JSON.stringify({ expires_at: '2026-01-01T00:00:10.000Z' }) }), target(), at + 1).kind, 'send', 'only tool calls expire');
    });

    it('sends the logged delivery again otherwise', () => {
      const d = delivery();
      assert.deepEqual(retryStep(d, target()), { kind: 'send', delivery: d, target: target() });
    });
  });

  describe('settle', () => {
    const schedule = [10, 60];
    const least = () => 0;

    it('ends a delivered event, and disables the webhook on a 410', () => {
      assert.deepEqual(settle(job, OK, schedule, 0), { kind: 'ended', status: 'succeeded', disable: false });
      assert.deepEqual(settle({ retries: 1 }, GONE, schedule, 0), { kind: 'ended', status: 'disabled', disable: true });
    });

    it('retries on the schedule, counting the retries, with the least jitter exactly on time', () => {
      assert.deepEqual(settle(job, outcome(), schedule, 1000, least), { kind: 'retry', at: 11_000, retries: 1 });
      assert.deepEqual(settle({ retries: 1 }, outcome({ refused: true }), schedule, 1000, least), { kind: 'retry', at: 61_000, retries: 2 });
    });

    it('waits at least as long as the receiver’s Retry-After asks', () => {
      assert.deepEqual(settle(job, outcome({ status_code: 429, retry_after_ms: 120_000 }), schedule, 0, least), { kind: 'retry', at: 120_000, retries: 1 });
    });

    it('is exhausted after the last entry of the schedule', () => {
      assert.deepEqual(settle({ retries: 2 }, outcome(), schedule, 0), { kind: 'exhausted' });
      assert.deepEqual(settle(job, outcome(), [], 0), { kind: 'exhausted' });
    });

    it('parks the job naming its logged delivery', () => {
      assert.deepEqual(retryJob(job, 'dlv_9', 1), { ...job, delivery_id: 'dlv_9', retries: 1 });
    });
  });

  describe('failureReport', () => {
    it('tells the session once, by the delivery id, what failed and how often', () => {
      const send = failureReport(delivery(), { id: 'dlv_1', attempts: 9 }, 'https://hooks.example/x', 'retries_exhausted', 'timed out');
      const command = {
        kind: 'webhook.delivery_failed',
        command_id: 'whf-dlv_1',
        message_id: 'msg_1',
        delivery: { delivery_id: 'dlv_1', webhook_id: 'ses_1:msg_1:session.completed', event_type: 'session.completed', url: 'https://hooks.example/x', attempts: 9, last_error: 'timed out', reason: 'retries_exhausted' },
      };
      assert.deepEqual(send, { to: SESSION, key: 'ses_1', name: 'webhook.delivery_failed', data: { session_id: 'ses_1', command }, job_id: sessionJobId('ses_1', 'whf-dlv_1'), priority: 'interactive' });
    });

    it('says something even without an error text, and nothing for a delivery about no session (a batch event)', () => {
      const send = failureReport(delivery(), { id: 'dlv_1', attempts: 1 }, 'u', 'gone', null);
      assert.equal((send!.data as { command: { delivery: { last_error: string } } }).command.delivery.last_error, 'delivery failed');
      assert.equal(failureReport(delivery({ session_id: null }), { id: 'dlv_1', attempts: 1 }, 'u', 'retries_exhausted', 'HTTP 500'), null);
    });
  });

  describe('redelivery', () => {
    it('is attempted only for a logged delivery with an enabled webhook', () => {
      assert.equal(redeliverable(delivery(), target()), true);
      assert.equal(redeliverable(null, target()), false);
      assert.equal(redeliverable(delivery(), null), false);
      assert.equal(redeliverable(delivery(), target({ disabled: true })), false);
    });

    it('starts no schedule: a failure leaves a delivery being retried pending with its next attempt, any other failed', () => {
      const next = new Date(5000);
      assert.deepEqual(afterRedelivery({ status: 'pending', next_attempt_at: next }, outcome()), { status: 'pending', next_attempt_at: next, disable: false });
      assert.deepEqual(afterRedelivery({ status: 'failed', next_attempt_at: null }, outcome()), { status: 'failed', next_attempt_at: null, disable: false });
      assert.deepEqual(afterRedelivery({ status: 'succeeded', next_attempt_at: null }, outcome()), { status: 'failed', next_attempt_at: null, disable: false });
    });

    it('records a success, and a 410 disables the webhook', () => {
      assert.deepEqual(afterRedelivery({ status: 'pending', next_attempt_at: new Date(1) }, OK), { status: 'succeeded', next_attempt_at: null, disable: false });
      assert.deepEqual(afterRedelivery({ status: 'failed', next_attempt_at: null }, GONE), { status: 'disabled', next_attempt_at: null, disable: true });
    });
  });

  describe('infraRetry', () => {
    it('re-runs a step that hit a store or queue error with doubling backoff, capped at 5 min', () => {
      assert.deepEqual(infraRetry(job, 1000), { at: 1250, delay_ms: 250, data: { ...job, infra_retries: 1 } });
      assert.equal(infraRetry({ ...job, infra_retries: 3 }, 0)!.delay_ms, 2000);
      assert.equal(infraRetry({ ...job, infra_retries: 11 }, 0)!.delay_ms, 5 * 60_000);
    });

    it('gives up after INFRA_RETRIES re-runs, having waited about 13.5 minutes in all', () => {
      assert.equal(infraRetry({ ...job, infra_retries: INFRA_RETRIES }, 0), null);
      let total = 0;
      let j: typeof job = job;
      for (let n = 0; n < 20; n++) {
        const r = infraRetry(j, 0);
        if (!r) break;
        total += r.delay_ms;
        j = r.data as typeof job;
      }
      assert.equal(j.infra_retries, INFRA_RETRIES);
      assert.ok(total > 13 * 60_000 && total < 14 * 60_000, `waited ${total} ms`);
    });
  });
});
