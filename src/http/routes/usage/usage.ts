import { InvalidRequestError } from '../../../domain/errors.js';
import { check } from '../../../schemas/validator.js';
import { summarize, type GroupBy } from '../../../usage/report.js';
import type { AppDeps } from '../../deps.js';
import { requireAuth, type RouteSpec } from '../../types.js';
import { sessionOr404 } from '../sessions/runtime.js';
import { orgUsageResponse, sessionUsageResponse, usageQuery } from './schema.js';

/** Token usage and cost: per session, and for the org by model, agent or session (routing-interface traffic included). */
export function usageRoutes(deps: AppDeps): RouteSpec[] {
  const usage = deps.stores.usage;
  return [
    {
      method: 'GET',
      path: '/v1/sessions/{session_id}/usage',
      summary: 'Input and output tokens, model calls and cost of a session, per model.',
      tag: 'usage',
      response: sessionUsageResponse,
      handler: async (ctx) => {
        const orgId = requireAuth(ctx).orgId;
        const session = await sessionOr404(deps, orgId, ctx.params.session_id);
        const { groups, totals } = await summarize(usage.range(orgId, null, null, session._id), 'model');
        return { session_id: session._id, models: groups, totals };
      },
    },
    {
      method: 'GET',
      path: '/v1/usage',
      summary: 'The organization’s token usage and cost in [from, to), grouped by model, agent or session.',
      tag: 'usage',
      query: usageQuery,
      response: orgUsageResponse,
      handler: async (ctx) => {
        const q = check<{ from?: string; to?: string; group_by: GroupBy }>(usageQuery, { ...ctx.query });
        const from = q.from ? new Date(q.from) : null;
        const to = q.to ? new Date(q.to) : null;
        if (from && to && from >= to) throw new InvalidRequestError('from must be before to.', 'from');
        const { groups, totals } = await summarize(usage.range(requireAuth(ctx).orgId, from, to), q.group_by);
        return { from: from?.toISOString() ?? null, to: to?.toISOString() ?? null, group_by: q.group_by, groups, totals };
      },
    },
  ];
}
