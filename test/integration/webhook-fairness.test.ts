import assert from 'node:assert/strict';
import { WEBHOOKS, webhookJobId, type ToolCallRequestedBody, type WebhookJob } from '../../src/domain/actors/webhook.js';
import { scriptedAgent } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { startRoleProcess, type RoleProcess } from '../support/role-process.js';
import { WebhookReceiver, type ReceivedWebhook } from '../fakes/webhook-receiver.js';
import { json, until } from '../support/wait.js';

const SLOW_MS = 2000;
const SLOW_DELIVERIES = 12;
const ENDPOINT_CAP = 2;

/** The most requests a receiver was answering at one moment (each is answered SLOW_MS after it arrived). */
function maxInFlight(got: ReceivedWebhook[], answerMs: number): number {
  const edges = got.flatMap((r) => [{ t: r.at, d: 1 }, { t: r.at + answerMs, d: -1 }]).sort((a, b) => a.t - b.t || a.d - b.d);
  let now = 0;
  let max = 0;
  for (const e of edges) max = Math.max(max, (now += e.d));
  return max;
}

/**
 * A slow receiver must not hold the webhook pool: two webhooks processes
 * (this one and a real second OS process) with 4 slots each, one agent's
 * endpoint answering after 2 s with 12 deliveries queued, and another
 * agent's delivery still goes out at once. The per-endpoint cap holds across
 * both processes, and every held-back delivery is still sent, once.
 */
describe('webhook fairness between endpoints', () => {
  let h: Harness;
  let second: RoleProcess | undefined;
  let slow: WebhookReceiver;
  let fast: WebhookReceiver;
  let orgId: string;
  let slowAgent: string;
  let fastAgent: string;
  let seq = 0;

  before(async () => {
    slow = await WebhookReceiver.start();
    fast = await WebhookReceiver.start();
    slow.fallback = { status: 200, delayMs: SLOW_MS };
    const env = { TROUPE_WEBHOOKS_ALLOW_PRIVATE: '1', TROUPE_WEBHOOK_CONCURRENCY: '4', TROUPE_WEBHOOK_ENDPOINT_CONCURRENCY: String(ENDPOINT_CAP) };
    h = await startHarness({ env });
    second = await startRoleProcess(['webhooks'], { ...h.env, METRICS_PORT: '0' });
    await second.waitForLog('webhooks started');
    ({ agentId: slowAgent, orgId } = await scriptedAgent(h, [{ text: 'done' }]));
    ({ agentId: fastAgent } = await scriptedAgent(h, [{ text: 'done' }]));
    for (const [agent, rx] of [[slowAgent, slow], [fastAgent, fast]] as const) {
      await json(await h.api(`/v1/agents/${agent}/webhook`, { method: 'PUT', json: { webhook_url: rx.url + '/hook', event_types: ['tool.call_requested'] } }), 200);
    }
  });
  after(async () => {
    second?.kill('SIGTERM');
    if (second) await Promise.race([second.exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (second && second.child.exitCode === null && second.child.signalCode === null) second.kill('SIGKILL');
    await h?.close();
    await slow?.close();
    await fast?.close();
  });

  function toolJob(agentId: string): WebhookJob {
    const n = ++seq;
    const sessionId = `ses_fair${n}`;
    const body: ToolCallRequestedBody = {
      id: `${sessionId}:msg_${n}:call_${n}`,
      type: 'tool.call_requested',
      session_id: sessionId,
      message_id: `msg_${n}`,
      tool_call_id: `call_${n}`,
      tool_name: 'lookup',
      arguments: {},
      input_schema: { type: 'object' },
      output_schema: { type: 'object' },
      expires_at: new Date(Date.now() + 600_000).toISOString(),
      submit_url: `${h.baseUrl}/v1/sessions/${sessionId}/events`,
    };
    return { kind: 'tool.call_requested', org_id: orgId, agent_id: agentId, session_id: sessionId, body };
  }

  async function enqueue(job: WebhookJob): Promise<void> {
    await h.running.core.plane.queues.queue(WEBHOOKS.name).add(job.kind, job, { jobId: webhookJobId(job), attempts: 1 });
  }

  it('sends another agent\u2019s delivery at once while a slow endpoint has a backlog, and caps the slow one across processes', async () => {
    const slowJobs = Array.from({ length: SLOW_DELIVERIES }, () => toolJob(slowAgent));
    await Promise.all(slowJobs.map(enqueue));
    // The slow endpoint is busy (and, without a cap, both processes' pools are full of its deliveries).
    await slow.waitFor(ENDPOINT_CAP, undefined, 10_000);
    await new Promise((r) => setTimeout(r, 300));
    const sent = Date.now();
    const other = toolJob(fastAgent);
    await enqueue(other);
    const [got] = await fast.waitFor(1, undefined, 30_000);
    const late = got.at - sent;
    assert.equal(got.headers['service-webhook-id'], (other as { body: { id: string } }).body.id);
    assert.ok(late < 1000, `the other agent's delivery arrived ${late} ms after it was queued`);

    // Every held-back delivery still goes out, once each, never more than the cap at a time over both processes.
    const all = await slow.waitFor(SLOW_DELIVERIES, undefined, 60_000);
    const ids = all.map((r) => r.headers['service-webhook-id']);
    assert.deepEqual(new Set(ids), new Set(slowJobs.map((j) => (j as { body: { id: string } }).body.id)));
    assert.equal(ids.length, SLOW_DELIVERIES);
    assert.ok(maxInFlight(all, SLOW_MS) <= ENDPOINT_CAP, `the slow endpoint had ${maxInFlight(all, SLOW_MS)} deliveries in flight at once`);
    const log = await until(async () => {
      const page = await json<{ deliveries: Array<{ status: string }> }>(await h.api(`/v1/agents/${slowAgent}/webhook/deliveries?limit=100`), 200);
      return page.deliveries.length === SLOW_DELIVERIES && page.deliveries.every((d) => d.status === 'succeeded') && page.deliveries;
    }, 30_000);
    assert.equal(log.length, SLOW_DELIVERIES);
  });
});
