import type { AppDeps } from '../deps.js';
import type { RouteSpec } from '../types.js';
import { credentialRoutes } from './credentials/credentials.js';
import { systemRoutes } from './system/system.js';

/**
 * Every base-API route module, in one list. A new resource adds one line
 * here; its module lives in routes/<resource>/.
 */
export function allRoutes(deps: AppDeps): RouteSpec[] {
  const routes: RouteSpec[] = [];
  routes.push(...systemRoutes(deps, () => routes));
  routes.push(...credentialRoutes(deps));
  return routes;
}
