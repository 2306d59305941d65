import { NotFoundError } from '../../../../domain/errors.js';
import type { JsonSchema } from '../../../../lib/schemas/validator.js';
import type { OrgDoc } from '../../../../store/orgs.js';
import type { AppDeps } from '../../deps.js';
import { requireAuth, type RouteSpec } from '../../types.js';
import { time } from '../../../../lib/schemas/common.js';
import { budgetSchema, nullableBudgetSchema, type Budget } from '../../../../domain/budget.js';

/** Up to 100 years; null keeps sessions forever (the default). */
const retention: JsonSchema = { type: ['integer', 'null'], minimum: 1, maximum: 36500, description: 'Idle sessions whose last activity is older than this many days are deleted; null keeps them forever.' };

/** The org's own limit; the operator's (admin CLI) still applies where it is tighter. */
const tokensPerMin: JsonSchema = { type: ['integer', 'null'], minimum: 1, maximum: 1e12, description: 'Routing-interface tokens (input + output) per minute for the whole organization; null leaves only the operator limit. The operator limit applies where it is tighter.' };

const organizationResponse: JsonSchema = {
  type: 'object',
  required: ['id', 'name', 'session_retention_days', 'created_at'],
  properties: { id: { type: 'string' }, name: { type: 'string' }, session_retention_days: retention, tokens_per_min: tokensPerMin, budget: { oneOf: [budgetSchema, { type: 'null' }] }, created_at: time },
};

const updateOrganizationBody: JsonSchema = { type: 'object', additionalProperties: false, minProperties: 1, properties: { session_retention_days: retention, tokens_per_min: tokensPerMin, budget: nullableBudgetSchema as unknown as JsonSchema } };

function orgView(o: OrgDoc): Record<string, unknown> {
  return { id: o._id, name: o.name, session_retention_days: o.session_retention_days ?? null, tokens_per_min: o.tokens_per_min ?? null, budget: o.budget ?? null, created_at: o.created_at.toISOString() };
}

/** The caller's organization and its settings (session retention, token limit, budget). */
export function organizationRoutes({ stores, limits, budgets }: AppDeps): RouteSpec[] {
  return [
    {
      method: 'GET',
      path: '/v1/organization',
      summary: 'Read the organization of the API key, with its settings.',
      tag: 'organization',
      response: organizationResponse,
      handler: async (ctx) => {
        const org = await stores.orgs.byId(requireAuth(ctx).orgId);
        if (!org) throw new NotFoundError('organization');
        return orgView(org);
      },
    },
    {
      method: 'PATCH',
      path: '/v1/organization',
      summary: 'Change organization settings: session_retention_days (null = keep sessions forever), tokens_per_min (null = the operator limit only), budget (a spend budget; null clears it).',
      tag: 'organization',
      body: { schema: updateOrganizationBody },
      response: organizationResponse,
      handler: async (ctx) => {
        const org = await stores.orgs.setSettings(requireAuth(ctx).orgId, ctx.state.body as { session_retention_days?: number | null; tokens_per_min?: number | null; budget?: Budget | null });
        if (!org) throw new NotFoundError('organization');
        limits?.tokens.forget(org._id);
        budgets?.forgetOrg(org._id);
        return orgView(org);
      },
    },
  ];
}
