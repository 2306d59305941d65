import { InvalidRequestError } from '../../../../domain/errors.js';
import { check } from '../../../../lib/schemas/validator.js';
import { GROUP_FIELD, groupPage, totalOf, type GroupBy } from '../../../../app/usage-report.js';
import type { AppDeps } from '../../deps.js';
import { requestedPage } from '../../pagination.js';
import { requireAuth, type RouteSpec } from '../../types.js';
import { sessionOr404 } from '../sessions/session-commands.js';
import { groupCursor, parseGroupCursor } from './group-cursor.js';
import type { BudgetRef, BudgetStanding } from '../../../../domain/budget.js';
import { orgUsageResponse, sessionUsageResponse, usageFilterQuery } from './schema.js';

/** The org's budget and each active key's, with this period's spend. */
async function orgBudgets(deps: AppDeps, orgId: string): Promise<BudgetStanding[]> {
  if (!deps.budgets) return [];
  const [org, keys] = await Promise.all([deps.stores.orgs.byId(orgId), deps.stores.apiKeys.list(orgId)]);
  const refs: BudgetRef[] = [];
  if (org?.budget) refs.push({ scope: 'org', id: orgId, budget: org.budget });
  for (const k of keys) if (k.budget && !k.revoked_at) refs.push({ scope: k.kind === 'routing' ? 'routing_key' : 'api_key', id: k._id, budget: k.budget });
  return deps.budgets.standings(orgId, refs);
}

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
        const range = { orgId, from: null, to: null, sessionId: session._id };
        // A session's models are the few its agent's options and routers name: one read holds them, and the totals
        // are added up from that same read, so a turn recorded while the answer is made shows in both or in neither.
        const sums = [];
        for await (const s of usage.sums(range, 'model')) sums.push(s);
        const [{ groups }, totals] = await Promise.all([groupPage(sums, 'model'), totalOf(sums)]);
        const budgets = deps.budgets ? await deps.budgets.standings(orgId, await deps.budgets.refsOf(orgId, null, session)) : [];
        return { session_id: session._id, models: groups, totals, budgets };
      },
    },
    {
      method: 'GET',
      path: '/v1/usage',
      summary: 'The organization’s token usage and cost in [from, to), grouped by model, agent or session, a page of groups at a time (limit groups; follow next_cursor with the same group_by, from and to).',
      tag: 'usage',
      query: usageFilterQuery,
      list: { cursor: 'group' },
      response: orgUsageResponse,
      handler: async (ctx) => {
        const { limit: _limit, after: _after, ...filters } = ctx.query;
        const q = check<{ from?: string; to?: string; group_by: GroupBy }>(usageFilterQuery, filters);
        const { limit, after: cursor } = requestedPage(ctx);
        const after = parseGroupCursor(cursor, q.group_by);
        const from = q.from ? new Date(q.from) : null;
        const to = q.to ? new Date(q.to) : null;
        if (from && to && from >= to) throw new InvalidRequestError('from must be before to.', 'from');
        const range = { orgId: requireAuth(ctx).orgId, from, to };
        const field = GROUP_FIELD[q.group_by];
        const [page, totals, budgets] = await Promise.all([groupPage(usage.sums(range, field, after), field, limit), totalOf(usage.totals(range)), orgBudgets(deps, range.orgId)]);
        const next_cursor = page.has_more ? groupCursor(page.last) : null;
        return { from: from?.toISOString() ?? null, to: to?.toISOString() ?? null, group_by: q.group_by, groups: page.groups, has_more: page.has_more, next_cursor, totals, budgets };
      },
    },
  ];
}
