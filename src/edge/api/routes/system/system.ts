import { within } from '../../../../domain/deadline.js';
import { UnavailableError } from '../../../../domain/errors.js';
import { metricsRefusal } from '../../../../lib/metrics/access.js';
import type { AppDeps } from '../../deps.js';
import { buildOpenApi } from '../../openapi.js';
import type { RouteSpec } from '../../types.js';

const PROBE_TIMEOUT_MS = 1500;


async function probe(name: string, fn: () => Promise<unknown>): Promise<{ name: string; ok: boolean; error?: string; ms: number }> {
  const started = Date.now();
  try {
    await within(fn(), PROBE_TIMEOUT_MS, () => {
      throw new Error(`${name} did not answer within ${PROBE_TIMEOUT_MS} ms`);
    });
    return { name, ok: true, ms: Date.now() - started };
  } catch (e) {
    return { name, ok: false, error: (e as Error).message, ms: Date.now() - started };
  }
}

/** Liveness, readiness, metrics and the OpenAPI document. */
export function systemRoutes(deps: AppDeps, allRoutes: () => RouteSpec[]): RouteSpec[] {
  let openapi: Record<string, unknown> | null = null;
  return [
    {
      method: 'GET',
      path: '/healthz',
      summary: 'Liveness: the process is up.',
      tag: 'system',
      auth: 'none',
      response: { type: 'object', required: ['status'], properties: { status: { type: 'string', const: 'ok' } }, additionalProperties: true },
      handler: async () => ({ status: 'ok', ...(deps.health?.() ?? {}) }),
    },
    {
      method: 'GET',
      path: '/readyz',
      summary: 'Readiness: MongoDB, Redis and its pub/sub subscriber answer, and the process is not shutting down.',
      tag: 'system',
      auth: 'none',
      errors: [503],
      response: {
        type: 'object',
        required: ['status', 'checks'],
        properties: {
          status: { type: 'string', const: 'ready' },
          checks: { type: 'array', items: { type: 'object', required: ['name', 'ok', 'ms'], properties: { name: { type: 'string' }, ok: { type: 'boolean' }, error: { type: 'string' }, ms: { type: 'number' } } } },
        },
      },
      handler: async (ctx) => {
        // At once on SIGTERM, so the load balancer stops sending new work while in-flight requests finish.
        if (deps.drain?.draining) throw new UnavailableError('Not ready: this process is shutting down.', 'draining');
        const checks = await Promise.all([
          probe('mongodb', () => deps.db.command({ ping: 1 })),
          probe('redis', async () => {
            // A disconnected client would queue the command; fail fast instead.
            if (deps.redis.status !== 'ready') throw new Error(`redis connection is ${deps.redis.status}`);
            return deps.redis.ping();
          }),
          // Streams and sync waiters hear the ledger through the subscriber: a node without it cannot serve them.
          ...(deps.sessionsRuntime ? [probe('redis_subscriber', () => deps.sessionsRuntime!.hub.check())] : []),
        ]);
        const failed = checks.filter((c) => !c.ok);
        if (failed.length) {
          ctx.state.log.warn({ checks }, 'not ready');
          throw new UnavailableError(`Not ready: ${failed.map((c) => `${c.name}: ${c.error}`).join('; ')}`, 'not_ready');
        }
        return { status: 'ready', checks };
      },
    },
    {
      method: 'GET',
      path: '/metrics',
      summary: 'Prometheus metrics of this process. With METRICS_TOKEN set, it needs Authorization: Bearer <METRICS_TOKEN> (401 without); in production, without a token or METRICS_PUBLIC=1, it is not served here (404).',
      tag: 'system',
      auth: 'none',
      errors: [401, 404],
      responseContent: { 'text/plain': { type: 'string', description: 'Prometheus text exposition format 0.0.4.' } },
      handler: async (ctx) => {
        const refused = metricsRefusal(deps.config.metricsAccess, ctx.get('authorization') || undefined, true);
        if (refused) throw refused;
        ctx.type = deps.metrics.registry.contentType;
        ctx.body = await deps.metrics.registry.metrics();
        return undefined;
      },
    },
    {
      method: 'GET',
      path: '/v1/openapi.json',
      summary: 'This API described as OpenAPI 3.1, generated from the request schemas.',
      tag: 'system',
      auth: 'none',
      response: { type: 'object', required: ['openapi', 'info', 'paths'], properties: { openapi: { type: 'string' }, info: { type: 'object' }, paths: { type: 'object' } } },
      handler: async () => (openapi ??= buildOpenApi(allRoutes(), deps.config.publicUrl)),
    },
  ];
}
