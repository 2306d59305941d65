import { InvalidRequestError, NotFoundError } from '../../../../domain/errors.js';
import { PROVIDER_SPECS, providersWith } from '../../../../domain/providers.js';
import { checkModelEndpoint } from '../../../../lib/net/model-endpoint.js';
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

async function checkCandidates(deps: AppDeps, orgId: string, input: RouterInput): Promise<void> {
  const seen = new Set<string>();
  const stored = await deps.stores.credentials.stored(orgId, input.candidates.map((c) => c.api_key_credential));
  for (const [i, c] of input.candidates.entries()) {
    if (seen.has(c.model)) throw new InvalidRequestError(`candidates[${i}].model repeats ${c.model}; each candidate model appears once.`, `candidates[${i}].model`, 'duplicate_candidate');
    seen.add(c.model);
    if (!stored.has(c.api_key_credential)) {
      throw new InvalidRequestError(`candidates[${i}].api_key_credential names ${c.api_key_credential}, which is not a stored credential; PUT /v1/credentials/${c.api_key_credential} first.`, `candidates[${i}].api_key_credential`, 'unknown_credential');
    }
    if (c.configuration_update && !PROVIDER_SPECS[c.provider].capabilities.configurationUpdate) {
      throw new InvalidRequestError(`candidates[${i}].configuration_update applies to ${providersWith('configurationUpdate').join(', ')} models only.`, `candidates[${i}].configuration_update`);
    }
    if (c.thinking_mode && !PROVIDER_SPECS[c.provider].capabilities.thinkingMode) {
      throw new InvalidRequestError(`candidates[${i}].thinking_mode applies to ${providersWith('thinkingMode').join(', ')} models only.`, `candidates[${i}].thinking_mode`);
    }
    if (c.base_url) await checkModelEndpoint(c.base_url, `candidates[${i}].base_url`, { allowPrivate: deps.config.modelsAllowPrivate });
  }
}

/** Model routers for the routing interface (DESIGN §8). */
export function routerRoutes(deps: AppDeps): RouteSpec[] {
  const { stores } = deps;
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
        const input = ctx.state.body as RouterInput;
        await checkCandidates(deps, orgId, input);
        return routerView(await stores.routers.put(orgId, id, input));
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
        const doc = await stores.routers.get(requireAuth(ctx).orgId, id);
        if (!doc) throw new NotFoundError('router', id);
        return routerView(doc);
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
        if (!(await stores.routers.delete(requireAuth(ctx).orgId, id))) throw new NotFoundError('router', id);
        return undefined;
      },
    },
  ];
}
