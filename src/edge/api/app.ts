import Koa from 'koa';
import type { AppDeps } from './deps.js';
import { consoleAssets } from './console.js';
import { KeyAuthenticator } from './middleware/auth.js';
import { bodyIdleTimeout } from './middleware/body-timeout.js';
import { errorMapper } from './middleware/errors.js';
import { requestContext } from './middleware/request-context.js';
import { traceRequests } from './middleware/trace.js';
import { mountRoutes, unmatchedRoute } from './route-table.js';
import { allRoutes } from './routes/index.js';
import type { AppState } from './types.js';

/** The base API as a Koa app, without listening; tests drive `app.callback()`. */
export function createApp(deps: AppDeps): Koa<AppState> {
  const app = new Koa<AppState>({ proxy: true });
  const auth = new KeyAuthenticator(deps.stores.apiKeys, deps.limits?.authFailures);
  const router = mountRoutes(allRoutes(deps), auth, deps.config.maxBodyBytes, deps.limits?.requests);
  app.use(traceRequests());
  app.use(requestContext(deps.log, deps.metrics));
  app.use(errorMapper());
  app.use(bodyIdleTimeout(deps.config.bodyIdleTimeoutMs));
  app.use(consoleAssets());
  app.use(router.routes());
  app.use(unmatchedRoute(router));
  // Errors are logged by errorMapper with the request id; silence Koa's stderr printer.
  app.silent = true;
  return app;
}
