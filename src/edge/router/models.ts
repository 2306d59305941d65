import { decodePathSegment } from '../../domain/path-segment.js';
import type { Ctx } from '../api/types.js';
import type { RouterDoc } from '../../domain/views/router.js';
import { authenticateRouting } from './credentials.js';
import { admitRouting, type RouterServices } from './handler.js';

/** The one model id callers send; the router picks among the candidates behind it. */
export const ROUTING_MODEL = 'service/routing';

/** `/v1/models` (default router), `/{router_id}/models` and `/{router_id}/v1/models` (a specific one; the latter for SDKs based at `/{router_id}/v1`). */
export function matchModelsPath(path: string): { routerId: string | null; route: string } | null {
  if (path === '/v1/models') return { routerId: null, route: path };
  const m = /^\/([^/]+)\/(models|v1\/models)$/.exec(path);
  if (!m || m[1] === 'v1') return null;
  return { routerId: decodePathSegment(m[1], 'router_id'), route: `/{router_id}/${m[2]}` };
}

function entry(id: string, ownedBy: string, created: Date, extra: Record<string, unknown>): Record<string, unknown> {
  // OpenAI's model object, plus the fields Anthropic's SDK reads (type, display_name, created_at).
  return { id, object: 'model', created: Math.floor(created.getTime() / 1000), owned_by: ownedBy, type: 'model', display_name: id, created_at: created.toISOString(), ...extra };
}

/**
 * OpenAI's list shape. `service/routing` comes first, since it is the only id
 * a request may name; the candidates follow in the router's order so a
 * client can see what it may be routed to. `has_more`/`first_id`/`last_id`
 * make the same body a valid Anthropic models page.
 */
export function modelList(router: RouterDoc): Record<string, unknown> {
  const data = [
    entry(ROUTING_MODEL, 'troupe', router.created_at, { router_id: router.router_id, policy: router.policy }),
    ...router.candidates.map((c) => entry(c.model, c.provider, router.updated_at, { router_id: router.router_id, routed_via: ROUTING_MODEL, reasoning_efforts: c.reasoning_efforts, context_window: c.context_window })),
  ];
  return { object: 'list', data, has_more: false, first_id: data[0].id, last_id: data[data.length - 1].id };
}

/**
 * The list at /v1 while the organization has no default router: nothing can be
 * named there yet (a request answers no_default_router), so nothing is listed
 * (docs/decisions.md, Router fit).
 */
export const EMPTY_MODEL_LIST = { object: 'list', data: [], has_more: false, first_id: null, last_id: null } as const;

export async function handleModels(ctx: Ctx, routerId: string | null, svc: RouterServices): Promise<void> {
  const { orgId, key } = await authenticateRouting(ctx.req, svc.auth, true);
  await admitRouting(ctx.res, svc, orgId, key._id);
  // A router named in the path that does not exist stays a 404.
  const router = routerId ? await svc.lookup.router(orgId, routerId) : await svc.lookup.find(orgId, null);
  ctx.status = 200;
  ctx.body = router ? modelList(router) : EMPTY_MODEL_LIST;
}
