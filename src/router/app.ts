import Koa from 'koa';
import { NotImplementedError, RouteNotFoundError } from '../domain/errors.js';
import type { AppDeps } from '../http/deps.js';
import { errorMapper } from '../http/middleware/errors.js';
import { requestContext } from '../http/middleware/request-context.js';
import type { AppState } from '../http/types.js';

const ROUTING_PATHS = [/^\/v1\/(messages|chat\/completions|responses)$/, /^\/[^/]+\/(messages|chat\/completions|v1\/responses)$/];

/**
 * The `{routing_url}` app. Until model routing lands it serves health
 * endpoints and answers the routing paths with an honest 501.
 */
export function createRouterApp(deps: AppDeps): Koa<AppState> {
  const app = new Koa<AppState>({ proxy: true });
  app.use(requestContext(deps.log, deps.metrics));
  app.use(errorMapper());
  app.use(async (ctx) => {
    if (ctx.method === 'GET' && ctx.path === '/healthz') {
      ctx.state.route = '/healthz';
      ctx.body = { status: 'ok', role: 'router' };
      return;
    }
    if (ctx.method === 'POST' && ROUTING_PATHS.some((r) => r.test(ctx.path))) {
      ctx.state.route = 'routing';
      throw new NotImplementedError('The routing interface is not available in this build yet.');
    }
    throw new RouteNotFoundError(ctx.method, ctx.path);
  });
  app.silent = true;
  return app;
}
