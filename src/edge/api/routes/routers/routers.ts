import { deleteRouter, putRouter, readRouter, type RouterServicePorts } from '../../../../app/routers/routers.js';
import { InvalidRequestError } from '../../../../domain/errors.js';
import type { RouterInput } from '../../../../store/routers.js';
import { routerView } from '../../../../domain/views/router.js';
import type { AppDeps } from '../../deps.js';
import { pageOf, requestedPage } from '../../pagination.js';
import { requireAuth, type RouteSpec } from '../../types.js';
import { putRouterBody, ROUTER_ID, routerListResponse, routerResponse } from './schema.js';

const ID = new RegExp(ROUTER_ID);
// `/v1/messages` is the default router's path, so a router named v1 could never be addressed.
const RESERVED = new Set(['v1', 'healthz', 'metrics']);

function routerIdParam(id: string): string {
  if (!ID.test(id) || RESERVED.has(id)) throw new InvalidRequestError(`Router ids match ${ROUTER_ID} and are not one of: ${[...RESERVED].join(', ')}.`, 'router_id', 'invalid_router_id');
  return id;
}

/** Model routers for the routing interface (DESIGN §8). */
export function routerRoutes(deps: AppDeps): RouteSpec[] {
  const { stores } = deps;
  const ports: RouterServicePorts = { stores, models: { allowPrivate: deps.config.modelsAllowPrivate } };
  return [
    {
      method: 'PUT',
      path: '/v1/routers/{router_id}',
      summary: 'Create or replace a router. Setting default true makes every other router of the org non-default.',
      tag: 'routers',
      body: { schema: putRouterBody },
      response: routerResponse,
      handler: async (ctx) => {
        const { orgId } = requireAuth(ctx);
        const id = routerIdParam(ctx.params.router_id);
        return routerView(await putRouter(ports, orgId, id, ctx.state.body as RouterInput));
      },
    },
    {
      method: 'GET',
      path: '/v1/routers',
      summary: 'List routers in router_id order.',
      tag: 'routers',
      list: { cursor: { pattern: ROUTER_ID, maxLength: 64, shape: 'a router_id' } },
      response: routerListResponse,
      handler: async (ctx) => {
        const { limit, after } = requestedPage(ctx);
        const page = pageOf(await stores.routers.list(requireAuth(ctx).orgId, limit, after), limit, (r) => r.router_id);
        return { routers: page.items.map(routerView), has_more: page.has_more, next_cursor: page.next_cursor };
      },
    },
    {
      method: 'GET',
      path: '/v1/routers/{router_id}',
      summary: 'A router.',
      tag: 'routers',
      response: routerResponse,
      handler: async (ctx) => {
        const id = routerIdParam(ctx.params.router_id);
        return routerView(await readRouter(stores.routers, requireAuth(ctx).orgId, id));
      },
    },
    {
      method: 'DELETE',
      path: '/v1/routers/{router_id}',
      summary: 'Delete a router.',
      tag: 'routers',
      status: 204,
      handler: async (ctx) => {
        const id = routerIdParam(ctx.params.router_id);
        await deleteRouter(stores.routers, requireAuth(ctx).orgId, id);
        return undefined;
      },
    },
  ];
}
