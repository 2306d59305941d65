import Koa from 'koa';
import type { RequestListener } from 'node:http';
import { RouteNotFoundError, UnavailableError } from '../../domain/errors.js';
import type { AppDeps } from '../api/deps.js';
import { KeyAuthenticator } from '../api/middleware/auth.js';
import { bodyIdleTimeout } from '../api/middleware/body-timeout.js';
import { errorMapper } from '../api/middleware/errors.js';
import { requestContext } from '../api/middleware/request-context.js';
import { traceRequests } from '../api/middleware/trace.js';
import type { AppState, Ctx } from '../api/types.js';
import { LlmClient } from '../../lib/llm/client.js';
import { metricsRefusal } from '../../lib/metrics/access.js';
import { modelCallMetrics } from '../../lib/metrics/model-metrics.js';
import { Stickiness } from '../../lib/routing/conversation.js';
import { CandidateHealth } from '../../lib/routing/health.js';
import type { RouterServices } from './handler.js';
import { routingEnvelope } from './envelope.js';
import { RoutingLookup } from '../../lib/routing/lookup.js';
import { handleModels, matchModelsPath } from './models.js';
import { buildRoutingOpenApi } from './openapi.js';
import { routingListener } from './routing-http.js';
import { UsageBuffer } from '../../lib/routing/usage-buffer.js';

/** Bodies carry whole conversations with images, so the limit is well above the base API's. */
export const ROUTING_MAX_BODY_BYTES = 10 * 1024 * 1024;

export interface RouterApp {
  /** What the router's HTTP server runs: routed calls directly, the rest (health, metrics, OpenAPI, the models list, 404s) through Koa. */
  listener: RequestListener;
  /** Writes buffered usage and closes the upstream connection pool; idempotent. */
  close(): Promise<void>;
}

/** The `{routing_url}` app: three formats in, the selected model out. */
export function createRouterApp(deps: Pick<AppDeps, 'stores' | 'log' | 'redis' | 'keys' | 'metrics' | 'config' | 'limits' | 'drain' | 'budgets'>, opts: { client?: LlmClient; usageFlushMs?: number } = {}): RouterApp {
  const client = opts.client ?? new LlmClient({ allowPrivate: deps.config.modelsAllowPrivate, observe: modelCallMetrics(deps.metrics), maxAnswerBytes: deps.config.buffers.upstreamAnswerBytes, maxEventBytes: deps.config.buffers.upstreamEventBytes });
  const usage = new UsageBuffer(deps.stores.usage, deps.log, opts.usageFlushMs, deps.budgets, deps.metrics);
  const svc: RouterServices = {
    auth: new KeyAuthenticator(deps.stores.apiKeys, deps.limits?.authFailures),
    lookup: new RoutingLookup(deps.stores),
    stickiness: new Stickiness(deps.redis, deps.keys),
    usage,
    client,
    maxBodyBytes: ROUTING_MAX_BODY_BYTES,
    limiter: deps.limits?.requests,
    tokens: deps.limits?.tokens,
    budgets: deps.budgets,
    metrics: deps.metrics,
    health: new CandidateHealth(deps.redis, deps.keys, deps.config.routerBreaker, { metrics: deps.metrics }),
    attemptTimeoutMs: deps.config.routerAttemptTimeoutMs,
  };
  let openapi: Record<string, unknown> | null = null;
  const app = new Koa<AppState>({ proxy: true });
  app.use(traceRequests());
  app.use(requestContext(deps.log, deps.metrics));
  app.use(errorMapper(routingEnvelope));
  app.use(bodyIdleTimeout(deps.config.bodyIdleTimeoutMs));
  app.use(async (koaCtx) => {
    const ctx = koaCtx as unknown as Ctx;
    if (ctx.method === 'GET' && ctx.path === '/healthz') {
      ctx.state.route = '/healthz';
      ctx.body = { status: 'ok', role: 'router' };
      return;
    }
    if (ctx.method === 'GET' && ctx.path === '/openapi.json') {
      ctx.state.route = '/openapi.json';
      ctx.body = (openapi ??= buildRoutingOpenApi(deps.config.routingPublicUrl));
      return;
    }
    if (ctx.method === 'GET' && ctx.path === '/metrics') {
      ctx.state.route = '/metrics';
      const refused = metricsRefusal(deps.config.metricsAccess, ctx.get('authorization') || undefined, true);
      if (refused) throw refused;
      ctx.type = deps.metrics.registry.contentType;
      ctx.body = await deps.metrics.registry.metrics();
      return;
    }
    if (ctx.method === 'GET' && ctx.path === '/readyz') {
      ctx.state.route = '/readyz';
      // 503 from the first moment of a shutdown, so the load balancer sends new calls elsewhere.
      if (deps.drain?.draining) throw new UnavailableError('Not ready: this process is shutting down.', 'draining');
      ctx.body = { status: 'ready', role: 'router' };
      return;
    }
    const models = ctx.method === 'GET' ? matchModelsPath(ctx.path) : null;
    if (models) {
      ctx.state.route = models.route;
      return handleModels(ctx, models.routerId, svc);
    }
    throw new RouteNotFoundError(ctx.method, ctx.path);
  });
  app.silent = true;
  let closing: Promise<void> | null = null;
  const close = () => (closing ??= Promise.allSettled([usage.close(), client.close()]).then(() => undefined));
  const listener = routingListener(app.callback(), { log: deps.log, metrics: deps.metrics, bodyIdleTimeoutMs: deps.config.bodyIdleTimeoutMs }, svc);
  return { listener, close };
}
