/**
 * Webhook benchmark (issue 7): first-attempt latency, from a `tool.call_requested`
 * job being enqueued to the receiver getting the signed POST, with a
 * `webhooks` role running in this process against local Redis + the
 * MongoDB-wire server, and a receiver on loopback.
 *   --rate: events enqueued per second (paced); a burst of --n at once follows.
 * Figures, not pass/fail.
 */
import { createServer } from 'node:http';
import { WEBHOOKS, webhookJobId, type WebhookJob } from '../../src/domain/actors/webhook.js';
import { startLocalServices } from '../../infra/services/local-services.js';
import { createLogger } from '../../src/lib/log/logger.js';
import { startRoles } from '../../src/roles/start.js';
import { fmt, summary } from '../support/percentiles.js';
import { benchArgs } from '../support/args.js';

const USAGE = 'Usage: node dist/bench/webhooks/run.js [--n 2000] [--rate 200]';
const values = benchArgs(USAGE, { n: { type: 'string', default: '2000' }, rate: { type: 'string', default: '200' } }, ['n', 'rate']);
const N = Number(values.n);
const RATE = Number(values.rate);

function job(i: number, run: string): WebhookJob {
  const sessionId = `ses_bench${run}${i}`;
  return {
    kind: 'tool.call_requested',
    org_id: 'org_bench',
    agent_id: 'agt_bench',
    session_id: sessionId,
    body: { id: `${sessionId}:msg_1:call_1`, type: 'tool.call_requested', session_id: sessionId, message_id: 'msg_1', tool_call_id: 'call_1', tool_name: 'lookup', arguments: { q: i }, input_schema: { type: 'object' }, output_schema: { type: 'object' }, expires_at: new Date().toISOString(), submit_url: 'http://127.0.0.1/v1/sessions/x/events' },
  };
}

async function main(): Promise<void> {
  const services = await startLocalServices({ log: () => undefined });
  const arrived = new Map<string, number>();
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      arrived.set(String(req.headers['service-webhook-id']), performance.now());
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
  const env = { MONGODB_URL: services.mongodbUrl, REDIS_URL: services.redisUrl, TROUPE_MONGODB_DB: 'bench_webhooks', TROUPE_WEBHOOKS_ALLOW_PRIVATE: '1', LOG_LEVEL: 'warn' };
  const running = await startRoles(['webhooks'], env, createLogger('warn'));
  try {
    await running.core.stores.webhookConfigs.put('org_bench', 'agt_bench', url, ['tool.call_requested']);
    const queue = running.core.plane.queues.queue(WEBHOOKS.name);
    const measure = async (label: string, gapMs: number) => {
      const run = `${label}${Date.now()}`;
      const sent = new Map<string, number>();
      const started = performance.now();
      for (let i = 0; i < N; i++) {
        const j = job(i, run);
        if (gapMs) await new Promise((r) => setTimeout(r, Math.max(0, started + i * gapMs - performance.now())));
        sent.set((j as { body: { id: string } }).body.id, performance.now());
        await queue.add(j.kind, j, { jobId: webhookJobId(j), attempts: 1 });
      }
      while ([...sent.keys()].some((id) => !arrived.has(id))) await new Promise((r) => setTimeout(r, 20));
      const s = summary([...sent].map(([id, t]) => arrived.get(id)! - t));
      const wall = (performance.now() - started) / 1000;
      console.log(`${label}: ${s.n} deliveries in ${wall.toFixed(1)} s; first-attempt latency p50 ${fmt(s.p50)}, p99 ${fmt(s.p99)}, max ${fmt(s.max)}`);
    };
    await measure('warmup', 0);
    await measure(`paced ${RATE}/s`, 1000 / RATE);
    await measure(`burst of ${N}`, 0);
  } finally {
    await running.close();
    await new Promise((r) => receiver.close(r));
    await services.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
