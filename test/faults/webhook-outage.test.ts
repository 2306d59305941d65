import assert from 'node:assert/strict';
import { verifyWebhook } from '../../src/lib/webhooks/verify.js';
import { WebhookReceiver, type ReceivedWebhook } from '../fakes/webhook-receiver.js';
import { auditUntilSettled } from './support/audit.js';
import { Cluster } from './support/cluster.js';
import { Load, scriptedAgent } from './support/load.js';
import { FULL, record } from './support/summary.js';

const SESSIONS = FULL ? 25 : 10;
const MESSAGES = 2;
const TIMEOUT_MS = 500;

interface Attempt {
  status_code: number | null;
  error: string | null;
}
interface Delivery {
  id: string;
  event_id: string;
  status: string;
  attempts: number;
  attempt_log: Attempt[];
}

describe('fault: a webhook receiver refusing, failing, timing out, then up', function () {
  let c: Cluster;
  let rx: WebhookReceiver;
  before(async () => {
    rx = await WebhookReceiver.start();
    // A short schedule (about 21 s in all) so that the outage below fits well inside it.
    c = await Cluster.start({ env: { TROUPE_WEBHOOK_RETRY_SCHEDULE: '0.5,0.5,0.5,0.5,1,1,1,1,2,2,2,3,3,3', TROUPE_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS) } });
    await c.start('web-1', 'web');
    await c.start('worker-1', 'worker');
    await c.start('webhooks-1', 'webhooks');
  });
  after(async () => {
    await c?.close();
    await rx?.close().catch(() => undefined);
  });

  async function api<T>(path: string, init: RequestInit & { json?: unknown } = {}): Promise<T> {
    const res = await fetch(c.url('web-1') + path, { ...init, headers: { Authorization: `Bearer ${c.apiKey}`, 'Content-Type': 'application/json' }, body: init.json === undefined ? undefined : JSON.stringify(init.json) });
    const text = await res.text();
    assert.ok(res.ok, `${path}: ${res.status} ${text}`);
    return JSON.parse(text) as T;
  }

  it('delivers every subscribed event once, same id and bytes on every attempt, signed, as the delivery log says', async () => {
    const agentId = await scriptedAgent(await c.db());
    const { signing_secret: secret } = await api<{ signing_secret: string }>(`/v1/agents/${agentId}/webhook`, { method: 'PUT', json: { webhook_url: `${rx.url}/hook`, event_types: ['session.completed'] } });
    await rx.down();
    const load = new Load({ webUrls: () => c.webUrls(), apiKey: c.apiKey });
    const sessions = await Promise.all(Array.from({ length: SESSIONS }, () => load.session(agentId)));
    await Promise.all(sessions.map((s) => load.messages(s, MESSAGES)));
    const events = SESSIONS * MESSAGES;
    const ledger = await auditUntilSettled(await c.db(), sessions, load.acked, 60_000);
    assert.equal(ledger.audit.stuck, 0);
    // Refused for a while, then 500s, then answers slower than the sender waits, then up.
    await new Promise((r) => setTimeout(r, 1500));
    rx.answer(...Array.from({ length: events }, () => ({ status: 500 })), ...Array.from({ length: events }, () => ({ status: 200, delayMs: TIMEOUT_MS * 3 })));
    await rx.up();
    const ok = (r: ReceivedWebhook) => r.answer.status === 200 && !r.answer.delayMs;
    await until(() => rx.received.filter((r) => r.answer.delayMs).length >= events, 60_000);
    const upAt = Date.now();
    await until(() => new Set(rx.received.filter(ok).map((r) => r.headers['service-webhook-id'])).size >= events, 60_000);
    const recovered = Date.now() - upAt;
    await new Promise((r) => setTimeout(r, 1000));

    const byId = new Map<string, ReceivedWebhook[]>();
    for (const r of rx.received) byId.set(String(r.headers['service-webhook-id']), [...(byId.get(String(r.headers['service-webhook-id'])) ?? []), r]);
    let duplicated = 0;
    for (const [id, got] of byId) {
      assert.equal(new Set(got.map((r) => r.rawBody)).size, 1, `${id}: the same bytes on every attempt`);
      for (const r of got) assert.equal(verifyWebhook({ secret, headers: r.headers, rawBody: r.rawBody, toleranceSeconds: 600 }).id, id);
      duplicated += Math.max(0, got.filter(ok).length - 1);
    }
    const { deliveries } = await api<{ deliveries: { id: string }[] }>(`/v1/agents/${agentId}/webhook/deliveries?limit=100`);
    const log = await Promise.all(deliveries.map((d) => api<Delivery>(`/v1/agents/${agentId}/webhook/deliveries/${d.id}`)));
    let stuck = 0;
    for (const d of log) {
      if (d.status !== 'succeeded') stuck++;
      const seen = byId.get(d.event_id) ?? [];
      // Refused and timed-out attempts may never reach the receiver (a connect can time out too); every answered one is logged as answered.
      const why = `${d.event_id}: log ${JSON.stringify(d.attempt_log)} vs ${seen.map((r) => r.answer.status + (r.answer.delayMs ? ' late' : '')).join(', ')}`;
      assert.equal(d.attempts, d.attempt_log.length, why);
      assert.ok(d.attempts >= seen.length, why);
      assert.equal(d.attempt_log.filter((a) => a.status_code === 500).length, seen.filter((r) => r.answer.status === 500).length, why);
      assert.equal(d.attempt_log.filter((a) => a.status_code === 200).length, seen.filter(ok).length, why);
      assert.ok(d.attempt_log.filter((a) => /timed out/.test(a.error ?? '')).length >= seen.filter((r) => r.answer.delayMs).length, why);
      assert.ok(d.attempt_log.every((a) => a.status_code !== null || /ECONNREFUSED|timed out/.test(a.error ?? '')), why);
    }
    assert.ok(log.some((d) => d.attempt_log.some((a) => /ECONNREFUSED/.test(a.error ?? ''))), 'some attempts met a refusing receiver');
    const lost = events - log.filter((d) => d.status === 'succeeded').length;
    record('webhook receiver refusing, 500, timing out, then up', { sessions: SESSIONS, events, lost, duplicated, stuck, gaps: 0, failed: 0, problems: [] }, recovered);
    assert.equal(log.length, events);
  });
});

async function until(pred: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
