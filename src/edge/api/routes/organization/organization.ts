import { NotFoundError } from '../../../../domain/errors.js';
import type { JsonSchema } from '../../../../lib/schemas/validator.js';
import type { OrgDoc } from '../../../../store/orgs.js';
import type { AppDeps } from '../../deps.js';
import { requireAuth, type RouteSpec } from '../../types.js';
import { time } from '../../../../lib/schemas/common.js';
import { budgetSchema, nullableBudgetSchema, type Budget } from '../../../../domain/budget.js';

/** Up to 100 years; null keeps sessions forever (the default). */
const retention: JsonSchema = { type: ['integer', 'null'], minimum: 1, maximum: 36500, description: 'Idle sessions whose last activity is older than this many days are deleted; null keeps them forever.' };

const organizationResponse: JsonSchema = {
  type: 'object',
  required: ['id', 'name', 'session_retention_days', 'created_at'],
  properties: { id: { type: 'string' }, name: { type: 'string' }, session_retention_days: retention, budget: { oneOf: [budgetSchema, { type: 'null' }] }, created_at: time },
};

const updateOrganizationBody: JsonSchema = { type: 'object', additionalProperties: false, minProperties: 1, properties: { session_retention_days: retention, budget: nullableBudgetSchema as unknown as JsonSchema } };

function orgView(o: OrgDoc): Record<string, unknown> {
  return { id: o._id, name: o.name, session_retention_days: o.session_retention_days ?? null, budget: o.budget ?? null, created_at: o.created_at.toISOString() };
}

/** The caller's organization and its settings (session retention). */
export function organizationRoutes({ stores, budgets }: AppDeps): RouteSpec[] {
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
      summary: 'Change organization settings: session_retention_days (null = keep sessions forever), budget (a spend budget; null clears it).',
      tag: 'organization',
      body: { schema: updateOrganizationBody },
      response: organizationResponse,
      handler: async (ctx) => {
        const org = await stores.orgs.setSettings(requireAuth(ctx).orgId, ctx.state.body as { session_retention_days?: number | null; budget?: Budget | null });
        if (!org) throw new NotFoundError('organization');
        budgets?.forgetOrg(org._id);
        return orgView(org);
      },
    },
  ];
}
