import { nullableBudgetSchema, budgetSchema, type Budget } from '../../../../domain/budget.js';
import { NotFoundError } from '../../../../domain/errors.js';
import type { JsonSchema } from '../../../../lib/schemas/validator.js';
import { time } from '../../../../lib/schemas/common.js';
import type { ApiKeyDoc } from '../../../../store/api-keys.js';
import type { AppDeps } from '../../deps.js';
import { requireAuth, type RouteSpec } from '../../types.js';

const keyResponse: JsonSchema = {
  type: 'object',
  required: ['id', 'prefix', 'kind', 'name', 'created_at', 'revoked_at', 'budget'],
  properties: {
    id: { type: 'string' },
    prefix: { type: 'string', description: 'The first characters of the key; the key itself is never shown again.' },
    kind: { type: 'string', enum: ['api', 'routing'] },
    name: { type: ['string', 'null'] },
    created_at: time,
    revoked_at: { type: ['string', 'null'], format: 'date-time' },
    budget: { oneOf: [budgetSchema, { type: 'null' }] },
  },
};

const updateKeyBody: JsonSchema = { type: 'object', additionalProperties: false, required: ['budget'], properties: { budget: nullableBudgetSchema as unknown as JsonSchema } };

export function keyView(k: ApiKeyDoc): Record<string, unknown> {
  return { id: k._id, prefix: k.prefix, kind: k.kind, name: k.name, created_at: k.created_at.toISOString(), revoked_at: k.revoked_at?.toISOString() ?? null, budget: k.budget ?? null };
}

/** A key's spend budget (API and routing keys of the caller's org); keys are created and revoked with the admin command. */
export function keyRoutes({ stores, budgets }: AppDeps): RouteSpec[] {
  return [
    {
      method: 'PATCH',
      path: '/v1/keys/{key_id}',
      summary: "Set (or clear, with null) the spend budget of one of the organization's API or routing keys.",
      tag: 'organization',
      body: { schema: updateKeyBody },
      response: keyResponse,
      handler: async (ctx) => {
        const orgId = requireAuth(ctx).orgId;
        const { budget } = ctx.state.body as { budget: Budget | null };
        // By id only, within the caller's org: another org's key is a 404 like an unknown one.
        const key = await stores.apiKeys.setBudget(orgId, ctx.params.key_id, budget, false);
        if (!key) throw new NotFoundError('key', ctx.params.key_id);
        budgets?.forgetKey(orgId, key._id);
        return keyView(key);
      },
    },
  ];
}
