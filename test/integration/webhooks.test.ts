import assert from 'node:assert/strict';
import { WEBHOOKS, webhookJobId, type ToolCallRequestedBody, type WebhookJob } from '../../src/domain/actors/webhook.js';
import { TroupeClient } from '../../clients/typescript/src/client.js';
import { verifyWebhook } from '../../src/lib/webhooks/verify.js';
import { scriptedAgent } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { WebhookReceiver, type ReceivedWebhook } from '../fakes/webhook-receiver.js';
import { json, until } from '../support/wait.js';

interface Delivery {
  id: string;
  event_id: string;
  event_type: string;
  status: string;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  attempt_log?: Array<{ number: number; status_code: number | null; error: string | null; redelivery: boolean }>;
}



describe('webhook deliveries', () => {
  let h: Harness;
  let rx: WebhookReceiver;
  let orgId: string;
  let agentId: string;
  let secret: string;
  let seq = 0;

  before(async () => {
    rx = await WebhookReceiver.start();
    h = await startHarness({ env: { TROUPE_WEBHOOKS_ALLOW_PRIVATE: '1', TROUPE_WEBHOOK_RETRY_SCHEDULE: '0.2,0.2,0.2', TROUPE_SESSION_SHARDS: '4' } });
    ({ agentId, orgId } = await scriptedAgent(h, [{ text: 'done' }]));
  });
  after(async () => {
    await h?.close();
    await rx?.close();
  });
  beforeEach(async () => {
    rx.reset();
    secret = await configure(['tool.call_requested', 'session.completed', 'session.failed', 'batch.completed']);
  });

  /** (Re)creates the webhook so every test starts from a fresh secret; returns the secret. */
  async function configure(eventTypes: string[], path = '/hook'): Promise<string> {
    await h.api(`/v1/agents/${agentId}/webhook`, { method: 'DELETE' });
    const res = await json<{ signing_secret: string }>(await h.api(`/v1/agents/${agentId}/webhook`, { method: 'PUT', json: { webhook_url: rx.url + path, event_types: eventTypes } }), 200);
    return res.signing_secret;
  }

  function toolJob(sessionId = `ses_fake${++seq}`): WebhookJob & { kind: 'tool.call_requested' } {
    const messageId = `msg_${seq}`;
    const body: ToolCallRequestedBody = {
      id: `${sessionId}:${messageId}:call_${seq}`,
      type: 'tool.call_requested',
      session_id: sessionId,
      message_id: messageId,
      tool_call_id: `call_${seq}`,
      tool_name: 'lookup',
      arguments: { q: `n\u00e9e ${seq}`, nested: { list: [1, 2] } },
      input_schema: { type: 'object' },
      output_schema: { type: 'object' },
      expires_at: new Date(Date.now() + 60_000).toISOString(),
      submit_url: `${h.baseUrl}/v1/sessions/${sessionId}/events`,
    };
    return { kind: 'tool.call_requested', org_id: orgId, agent_id: agentId, session_id: sessionId, body };
  }

  async function enqueue(job: WebhookJob): Promise<string> {
    const jobId = webhookJobId(job);
    await h.running.core.plane.queues.queue(WEBHOOKS.name).add(job.kind, job, { jobId, attempts: 1 });
    return jobId;
  }

  async function settledJob(jobId: string): Promise<void> {
    const q = h.running.core.plane.queues.queue(WEBHOOKS.name);
    await until(async () => (await q.getJobState(jobId)) === 'completed');
  }

  async function deliveries(query = ''): Promise<{ deliveries: Delivery[]; has_more: boolean; next_cursor: string | null }> {
    return json(await h.api(`/v1/agents/${agentId}/webhook/deliveries${query}`), 200);
  }

  async function deliveryFor(eventId: string, status?: string): Promise<Delivery> {
    const found = await until(async () => (await deliveries('?limit=100')).deliveries.find((d) => d.event_id === eventId && (!status || d.status === status)));
    return json<Delivery>(await h.api(`/v1/agents/${agentId}/webhook/deliveries/${found.id}`), 200);
  }

  async function newSession(metadata: Record<string, string> = {}): Promise<{ id: string }> {
    return json(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: { metadata } }), 201);
  }

  it('delivers tool.call_requested with the exact body, the spec headers and a verifiable signature', async () => {
    const job = toolJob();
    await enqueue(job);
    const [got] = await rx.waitFor(1);
    assert.equal(got.path, '/hook');
    assert.equal(got.rawBody, JSON.stringify(job.body));
    assert.deepEqual(Object.keys(JSON.parse(got.rawBody)).sort(), ['arguments', 'expires_at', 'id', 'input_schema', 'message_id', 'output_schema', 'session_id', 'submit_url', 'tool_call_id', 'tool_name', 'type']);
    assert.equal(got.headers['user-agent'], 'Service-Webhook/1.0');
    assert.equal(got.headers['content-type'], 'application/json');
    assert.equal(got.headers['service-webhook-id'], job.body.id);
    assert.ok(Math.abs(Number(got.headers['service-webhook-timestamp']) - Date.now() / 1000) < 10);
    assert.deepEqual(verifyWebhook({ secret, headers: got.headers, rawBody: got.rawBody }).id, job.body.id);
    assert.throws(() => verifyWebhook({ secret, headers: got.headers, rawBody: got.rawBody.replace('lookup', 'lookups') }));
    const d = await deliveryFor(job.body.id, 'succeeded');
    assert.equal(d.attempts, 1);
    assert.equal(d.last_status_code, 200);
    assert.equal(d.event_type, 'tool.call_requested');
    assert.match(d.id, /^whd_[0-9a-z]{26}$/);
  });

  it('retries with the same id and the same body, new signatures, until a later success', async () => {
    rx.answer({ status: 500 }, { status: 502 }, { status: 200 });
    const job = toolJob();
    await enqueue(job);
    const got = await rx.waitFor(3);
    assert.deepEqual(new Set(got.map((r) => r.headers['service-webhook-id'])), new Set([job.body.id]));
    assert.deepEqual(new Set(got.map((r) => r.rawBody)), new Set([JSON.stringify(job.body)]));
    for (const r of got) verifyWebhook({ secret, headers: r.headers, rawBody: r.rawBody });
    const d = await deliveryFor(job.body.id, 'succeeded');
    assert.equal(d.attempts, 3);
    assert.deepEqual(d.attempt_log!.map((a) => a.status_code), [500, 502, 200]);
    assert.equal(d.attempt_log![0].error, 'HTTP 500');
    await new Promise((r) => setTimeout(r, 600));
    assert.equal(rx.received.length, 3, 'no attempt after the success');
  });

  it('delivers only subscribed event types', async () => {
    secret = await configure(['tool.call_requested']);
    const s = await newSession();
    const lifecycle: WebhookJob = { kind: 'session.lifecycle', org_id: orgId, agent_id: agentId, session_id: s.id, message_id: 'msg_unsubscribed', type: 'session.completed' };
    const batch: WebhookJob = { kind: 'batch.lifecycle', org_id: orgId, agent_id: agentId, batch_id: 'bat_unsubscribed', type: 'batch.failed' };
    await settledJob(await enqueue(lifecycle));
    await settledJob(await enqueue(batch));
    const tool = toolJob();
    await enqueue(tool);
    await rx.waitFor(1);
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(rx.received.map((r) => r.headers['service-webhook-id']), [tool.body.id]);
    const log = (await deliveries('?limit=100')).deliveries.map((d) => d.event_id);
    assert.ok(!log.includes(`${s.id}:msg_unsubscribed:session.completed`), 'skipped events are not logged');
  });

  it('sends lifecycle bodies with the session fields and its creation metadata', async () => {
    const s = await newSession({ team: 'blue', run: '7' });
    const job: WebhookJob = { kind: 'session.lifecycle', org_id: orgId, agent_id: agentId, session_id: s.id, message_id: 'msg_life', type: 'session.completed' };
    await enqueue(job);
    const [got] = await rx.waitFor(1);
    const body = JSON.parse(got.rawBody);
    assert.equal(body.id, `${s.id}:msg_life:session.completed`);
    assert.equal(got.headers['service-webhook-id'], body.id);
    assert.equal(body.type, 'session.completed');
    assert.ok(!Number.isNaN(Date.parse(body.created_at)));
    assert.deepEqual(Object.keys(body).sort(), ['created_at', 'data', 'id', 'type']);
    assert.deepEqual(body.data, { session_id: s.id, batch_id: null, agent_id: agentId, version_id: body.data.version_id, llm_id: 'main', status: 'idle', last_message_status: null, metadata: { team: 'blue', run: '7' } });
    assert.match(body.data.version_id, /^ver_/);
  });

  it('sends batch events to the agent\u2019s webhook, tolerating a batch record not written yet', async () => {
    const job: WebhookJob = { kind: 'batch.lifecycle', org_id: orgId, agent_id: agentId, batch_id: 'bat_nothere', type: 'batch.completed' };
    await enqueue(job);
    const [got] = await rx.waitFor(1);
    const body = JSON.parse(got.rawBody);
    assert.equal(body.id, 'bat_nothere:batch.completed');
    assert.deepEqual(body.data, { batch_id: 'bat_nothere', agent_id: agentId, status: 'completed', counts: null });
  });

  it('records webhook.delivery_failed in the session ledger after the retries run out', async () => {
    rx.fallback = { status: 500 };
    const s = await newSession();
    const job: WebhookJob = { kind: 'session.lifecycle', org_id: orgId, agent_id: agentId, session_id: s.id, message_id: 'msg_exhaust', type: 'session.completed' };
    await enqueue(job);
    await rx.waitFor(4);
    const failed = await until(async () => {
      const { events } = await json<{ events: Array<{ type: string; data: Record<string, unknown>; message_id: string | null; source: string }> }>(await h.api(`/v1/sessions/${s.id}/events?limit=100`), 200);
      return events.find((e) => e.type === 'webhook.delivery_failed');
    });
    const d = await deliveryFor(`${s.id}:msg_exhaust:session.completed`, 'failed');
    assert.equal(failed.source, 'platform');
    assert.equal(failed.message_id, 'msg_exhaust');
    assert.deepEqual(failed.data, { delivery_id: d.id, webhook_id: `${s.id}:msg_exhaust:session.completed`, event_type: 'session.completed', url: `${rx.url}/hook`, attempts: 4, last_error: 'HTTP 500', reason: 'retries_exhausted' });
    assert.equal(d.attempts, 4, 'first attempt plus the three scheduled retries');
    assert.equal(d.next_attempt_at, null);
    await new Promise((r) => setTimeout(r, 600));
    assert.equal(rx.received.length, 4, 'nothing after exhaustion');
  });

  it('counts a redirect as a failure and does not follow it', async () => {
    rx.answer({ status: 302, headers: { location: `${rx.url}/elsewhere` } }, { status: 200 });
    const job = toolJob();
    await enqueue(job);
    const got = await rx.waitFor(2);
    assert.deepEqual(got.map((r) => r.path), ['/hook', '/hook']);
    const d = await deliveryFor(job.body.id, 'succeeded');
    assert.equal(d.attempt_log![0].status_code, 302);
    assert.match(d.attempt_log![0].error!, /redirect/);
  });

  it('honours Retry-After', async () => {
    rx.answer({ status: 503, headers: { 'retry-after': '2' } }, { status: 200 });
    const job = toolJob();
    await enqueue(job);
    const got = await rx.waitFor(2, undefined, 10_000);
    const gap = got[1].at - got[0].at;
    assert.ok(gap >= 1900, `retried after ${gap} ms; the schedule alone would be 200-240 ms`);
    await deliveryFor(job.body.id, 'succeeded');
  });

  it('records webhook.delivery_failed with its reason when a delivery ends early: a 410, an expired tool call, a removed webhook', async () => {
    const ledgerFailure = (sessionId: string) =>
      until(async () => {
        const { events } = await json<{ events: Array<{ type: string; data: Record<string, unknown> }> }>(await h.api(`/v1/sessions/${sessionId}/events?limit=100`), 200);
        return events.find((e) => e.type === 'webhook.delivery_failed');
      });
    // A tool call whose retry would come after its expires_at is not sent again.
    const s1 = await newSession();
    const expiring = toolJob(s1.id);
    expiring.body.expires_at = new Date(Date.now() + 1000).toISOString();
    rx.answer({ status: 500, headers: { 'retry-after': '2' } });
    await enqueue(expiring);
    const expired = await ledgerFailure(s1.id);
    assert.equal(expired.data.reason, 'expired');
    assert.match(String(expired.data.last_error), /^tool call expired at /);
    assert.equal(expired.data.attempts, 1);
    assert.equal((await deliveryFor(expiring.body.id, 'failed')).attempts, 1);
    assert.equal(rx.received.filter((r) => r.headers['service-webhook-id'] === expiring.body.id).length, 1, 'not sent after it expired');
    // The webhook removed while a retry is pending.
    const s2 = await newSession();
    const removed = toolJob(s2.id);
    rx.answer({ status: 500, headers: { 'retry-after': '1' } });
    await enqueue(removed);
    await deliveryFor(removed.body.id, 'pending');
    await h.api(`/v1/agents/${agentId}/webhook`, { method: 'DELETE' });
    assert.equal((await ledgerFailure(s2.id)).data.reason, 'config_deleted');
    // A 410 disables the webhook and ends the delivery.
    secret = await configure(['tool.call_requested']);
    const s3 = await newSession();
    const gone = toolJob(s3.id);
    rx.answer({ status: 410 });
    await enqueue(gone);
    const goneEvent = await ledgerFailure(s3.id);
    assert.deepEqual({ reason: goneEvent.data.reason, last_error: goneEvent.data.last_error, attempts: goneEvent.data.attempts }, { reason: 'gone', last_error: 'HTTP 410', attempts: 1 });
  });

  it('disables the webhook on 410 until it is configured again', async () => {
    rx.answer({ status: 410 });
    const first = toolJob();
    await enqueue(first);
    await rx.waitFor(1);
    const d = await deliveryFor(first.body.id, 'disabled');
    assert.equal(d.attempts, 1);
    const cfg = await new TroupeClient({ baseUrl: h.baseUrl, apiKey: h.apiKey }).webhooks.get(agentId);
    assert.ok(cfg.disabled_at, 'the configuration shows it is disabled');
    // Every field on the wire is in the OpenAPI document, so the client's types (generated from it) carry it.
    const doc = await json<{ paths: Record<string, { get: { responses: { 200: { content: { 'application/json': { schema: { properties: object } } } } } } }> }>(await h.api('/v1/openapi.json'), 200);
    const declared = Object.keys(doc.paths['/v1/agents/{agent_id}/webhook'].get.responses[200].content['application/json'].schema.properties);
    assert.deepEqual(Object.keys(cfg).filter((k) => !declared.includes(k)), []);
    const later = toolJob();
    await settledJob(await enqueue(later));
    assert.equal(rx.received.length, 1, 'nothing sent while disabled');
    const redeliver = await h.api(`/v1/agents/${agentId}/webhook/deliveries/${d.id}/redeliver`, { method: 'POST' });
    assert.equal((await json<{ error: { code: string } }>(redeliver, 409)).error.code, 'webhook_disabled');
    await h.api(`/v1/agents/${agentId}/webhook`, { method: 'PUT', json: { webhook_url: rx.url + '/hook', event_types: ['tool.call_requested'] } });
    assert.equal((await json<{ disabled_at?: string }>(await h.api(`/v1/agents/${agentId}/webhook`), 200)).disabled_at, undefined);
    const again = toolJob();
    await enqueue(again);
    const got = await rx.waitFor(2);
    assert.equal(got[1].headers['service-webhook-id'], again.body.id);
  });

  it('signs with both secrets during the hour after a rotation', async () => {
    const rotated = await json<{ signing_secret: string }>(await h.api(`/v1/agents/${agentId}/webhook/rotate-secret`, { method: 'POST' }), 200);
    const job = toolJob();
    await enqueue(job);
    const [got] = await rx.waitFor(1);
    assert.match(String(got.headers['service-webhook-signature']), /^v1=[0-9a-f]{64} v1=[0-9a-f]{64}$/);
    verifyWebhook({ secret: rotated.signing_secret, headers: got.headers, rawBody: got.rawBody });
    verifyWebhook({ secret, headers: got.headers, rawBody: got.rawBody });
  });

  it('pages the delivery log newest first, redelivers the same id and body, and never shows secrets', async () => {
    const jobs = [toolJob(), toolJob(), toolJob()];
    for (const j of jobs) {
      await enqueue(j);
      await deliveryFor(j.body.id, 'succeeded');
    }
    const page1 = await deliveries('?limit=2');
    assert.equal(page1.has_more, true);
    assert.deepEqual(page1.deliveries.map((d) => d.event_id), [jobs[2].body.id, jobs[1].body.id]);
    const page2 = await deliveries(`?limit=2&after=${page1.next_cursor}`);
    assert.equal(page2.deliveries[0].event_id, jobs[0].body.id);
    const rawList = await (await h.api(`/v1/agents/${agentId}/webhook/deliveries?limit=100`)).text();
    assert.ok(!rawList.includes(secret) && !rawList.includes('whsec_'), 'no secret in the log');

    const target = page2.deliveries[0];
    const before: ReceivedWebhook = rx.received.find((r) => r.headers['service-webhook-id'] === jobs[0].body.id)!;
    const res = await json<Delivery>(await h.api(`/v1/agents/${agentId}/webhook/deliveries/${target.id}/redeliver`, { method: 'POST' }), 200);
    assert.equal(res.id, target.id);
    const again = await until(async () => rx.received.filter((r) => r.headers['service-webhook-id'] === jobs[0].body.id)[1]);
    assert.equal(again.rawBody, before.rawBody);
    verifyWebhook({ secret, headers: again.headers, rawBody: again.rawBody });
    const d = await until(async () => {
      const x = await json<Delivery>(await h.api(`/v1/agents/${agentId}/webhook/deliveries/${target.id}`), 200);
      return x.attempts === 2 ? x : undefined;
    });
    assert.deepEqual(d.attempt_log!.map((a) => a.redelivery), [false, true]);
    assert.equal(d.status, 'succeeded');
  });

  it('404s another org\u2019s agent and delivery, and an unknown delivery', async () => {
    const job = toolJob();
    await enqueue(job);
    const d = await deliveryFor(job.body.id, 'succeeded');
    const other = await h.running.core.stores.orgs.create(`webhook-other-${Date.now()}`);
    const { key } = await h.running.core.stores.apiKeys.create(other._id, 'api');
    const asOther = { headers: { Authorization: `Bearer ${key}` } };
    assert.equal((await h.api(`/v1/agents/${agentId}/webhook/deliveries`, asOther)).status, 404);
    assert.equal((await h.api(`/v1/agents/${agentId}/webhook/deliveries/${d.id}`, asOther)).status, 404);
    assert.equal((await h.api(`/v1/agents/${agentId}/webhook/deliveries/${d.id}/redeliver`, { method: 'POST', ...asOther })).status, 404);
    assert.equal((await h.api(`/v1/agents/${agentId}/webhook/deliveries/whd_01jzzzzzzzzzzzzzzzzzzzzzzz`)).status, 404);
    await settledJob(webhookJobId(job));
    assert.equal(rx.received.length, 1, 'the 404 redelivery sent nothing');
  });

  it('end to end: a finished turn pushes session.completed with the session\u2019s final fields', async () => {
    secret = await configure(['session.completed']);
    const s = await newSession({ flow: 'e2e' });
    const posted = await json<{ message: { id: string } }>(await h.api(`/v1/sessions/${s.id}/events`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text: 'hi' }] } }), 201);
    const [got] = await rx.waitFor(1);
    const body = JSON.parse(got.rawBody);
    assert.equal(body.id, `${s.id}:${posted.message.id}:session.completed`);
    assert.equal(body.type, 'session.completed');
    assert.deepEqual([body.data.session_id, body.data.last_message_status, body.data.metadata], [s.id, 'completed', { flow: 'e2e' }]);
    verifyWebhook({ secret, headers: got.headers, rawBody: got.rawBody });
  });

  it('end to end: a finished batch pushes its terminal event once, with counts', async () => {
    secret = await configure(['batch.completed', 'batch.failed', 'batch.partial_failed']);
    const items = [0, 1].map(() => ({ agent_id: agentId, message: { content: [{ type: 'text', text: 'hi' }] } }));
    const batch = await json<{ batch_id: string }>(await h.api('/v1/session-batches', { method: 'POST', json: { items } }), 201);
    const [got] = await rx.waitFor(1, undefined, 20_000);
    const body = JSON.parse(got.rawBody);
    assert.equal(body.id, `${batch.batch_id}:batch.completed`);
    assert.deepEqual(body.data, { batch_id: batch.batch_id, agent_id: agentId, status: 'completed', counts: { queued: 0, running: 0, completed: 2, failed: 0 } });
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(rx.received.length, 1, 'fired once');
  });

  it('counts deliveries by outcome in /metrics', async () => {
    // Makes its own deliveries and reads the change, so it holds alone (--grep) and in any order.
    const counted = async () => {
      const text = await (await fetch(`${h.baseUrl}/metrics`)).text();
      const value = (re: RegExp) => Number(re.exec(text)?.[1] ?? 0);
      return {
        succeeded: value(/^troupe_webhook_deliveries_total\{outcome="succeeded"[^}]*\} (\d+)$/m),
        skipped: value(/^troupe_webhook_deliveries_total\{outcome="skipped"[^}]*\} (\d+)$/m),
        failedAttempts: value(/^troupe_webhook_attempts_total\{result="failed"[^}]*\} (\d+)$/m),
      };
    };
    const before = await counted();
    secret = await configure(['tool.call_requested']);
    rx.answer({ status: 500 }, { status: 200 });
    const tool = toolJob();
    await settledJob(await enqueue(tool));
    await settledJob(await enqueue({ kind: 'batch.lifecycle', org_id: orgId, agent_id: agentId, batch_id: 'bat_metrics', type: 'batch.failed' }));
    const after = await counted();
    assert.deepEqual({ succeeded: after.succeeded - before.succeeded, skipped: after.skipped - before.skipped, failedAttempts: after.failedAttempts - before.failedAttempts }, { succeeded: 1, skipped: 1, failedAttempts: 1 });
  });
});
