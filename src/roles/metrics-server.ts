import { shardQueueName } from '../../actors/runtime/dispatcher.js';
import { metricsRefusal } from '../lib/metrics/access.js';
import { queueProbe } from '../../actors/runtime/prometheus-observer.js';
import type { Core } from './core.js';
import { sandboxCapabilities } from '../lib/sandbox/capabilities.js';
import { listen } from './http-server.js';

/** The queues each actor-running role consumes, by the `queue` label they are reported under. */
const ROLE_QUEUES: Record<string, { label: string; keyed: boolean }[]> = {
  worker: [
    { label: 'session', keyed: true },
    { label: 'router-proxy', keyed: false },
    { label: 'tool-runner', keyed: false },
    { label: 'batches', keyed: false },
  ],
  webhooks: [{ label: 'webhooks', keyed: false }],
};

/** Queue depth and age of the queues this process consumes (session shards summed as one). */
export function watchActorQueues(core: Core, roles: string[]): void {
  const { queues, dispatcher } = core.plane;
  for (const role of roles) {
    for (const q of ROLE_QUEUES[role] ?? []) {
      const names = q.keyed ? Array.from({ length: dispatcher.shards }, (_, i) => shardQueueName(q.label, i)) : [q.label];
      core.metrics.watchQueues(q.label, names.map((n) => queueProbe(queues.queue(n), () => core.redis.status === 'ready')));
    }
  }
}

/**
 * `/metrics` and `/healthz` for a worker or webhooks process, on METRICS_PORT:
 * a split deploy scrapes every role. Nothing else is served there.
 */
export async function startMetricsServer(core: Core, roles: string[]): Promise<number> {
  const { metrics, config } = core;
  const handler = (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && path === '/metrics') {
      const refused = metricsRefusal(config.metricsAccess, req.headers.authorization, false);
      if (refused) {
        res.writeHead(refused.status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: refused.toBody() }));
        return;
      }
      metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
        () => res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"type":"api_error","code":"metrics_failed","message":"Could not collect metrics."}}'),
      );
      return;
    }
    if (req.method === 'GET' && path === '/healthz') {
      const status = core.drain.draining ? 'draining' : 'ok';
      // A worker runs tenant code: its /healthz shows the sandbox in force, as web's does.
      const sandbox = roles.includes('worker') ? { sandbox: sandboxCapabilities() } : {};
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status, roles, ...sandbox }));
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { type: 'not_found_error', code: 'route_not_found', message: `No route for ${req.method} ${path}; this port serves /metrics and /healthz.` } }));
  };
  const { port, closer } = await listen('metrics', handler, { port: config.metricsPort, setting: 'METRICS_PORT', host: config.host, graceMs: 1000, drain: core.drain, log: core.log });
  core.shutdown.add(closer);
  core.log.info({ roles, host: config.host ?? '*', port }, 'metrics listening');
  return port;
}
