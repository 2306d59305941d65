import { createBatch, type BatchDeps, type CreateBatchBody } from '../../../../app/batches/create-batch.js';
import { batchItemCheck, type BatchItemInput } from '../../../../app/batches/plan.js';
import { readBatch } from '../../../../store/batch-view.js';
import { parseJsonBody } from '../../middleware/body.js';
import type { AppDeps } from '../../deps.js';
import { requireAuth, type RouteSpec } from '../../types.js';
import { check } from '../../../../lib/schemas/validator.js';
import { BATCH_MAX_BODY_BYTES, MAX_BATCH_ITEMS, batchItemSchema, batchReadQuery, batchResponse, createBatchBody, createBatchDocBody, createdBatchResponse } from './schema.js';

/** Session batches (spec: Session batches). */
export function sessionBatchRoutes(deps: AppDeps): RouteSpec[] {
  const batches = deps.stores.batches;
  // An item that breaks the schema or names a file the org does not have fails on its own.
  const checkItem = (orgId: string, items: readonly unknown[]) => batchItemCheck(deps.stores.files, orgId, (item, index) => check<BatchItemInput>(batchItemSchema, item, `items[${index}]`), items);
  const batchDeps = (orgId: string, items: readonly unknown[], apiKeyId?: string): BatchDeps => ({ stores: deps.stores, batches, agents: deps.stores.agents, box: deps.box, outbox: deps.outbox, publicUrl: deps.config.publicUrl, checkItem: checkItem(orgId, items), apiKeyId });
  return [
    {
      method: 'POST',
      path: '/v1/session-batches',
      summary: 'Create one session per item, each with its first user message; results in input order.',
      errors: [404, 409, 422],
      tag: 'session-batches',
      // Parsed by the handler: a batch may exceed the global body limit.
      rawBody: { contentType: 'application/json', description: `{idempotency_key?, items[]}; at most ${MAX_BATCH_ITEMS} items, all with one agent_id; see the spec’s Session batches. Only envelope problems are 400; an invalid item is returned with status "failed" and an error.`, schema: createBatchDocBody },
      response: createdBatchResponse,
      status: 201,
      handler: async (ctx) => {
        const orgId = requireAuth(ctx).orgId;
        await parseJsonBody(ctx, { schema: createBatchBody }, Math.max(BATCH_MAX_BODY_BYTES, deps.config.maxBodyBytes));
        const body = ctx.state.body as CreateBatchBody;
        const created = await createBatch(batchDeps(orgId, Array.isArray(body.items) ? body.items : [], ctx.state.auth?.key._id), orgId, body);
        // Its sessions count toward the running-session cap from now on.
        deps.limits?.sessions.forget(orgId);
        return created;
      },
    },
    {
      method: 'GET',
      path: '/v1/session-batches/{batch_id}',
      summary: 'Read a batch: status and counts derived from its child sessions, and the items in input order (left out with include_sessions=false).',
      tag: 'session-batches',
      query: batchReadQuery,
      response: batchResponse,
      handler: async (ctx) => {
        const { include_sessions } = check<{ include_sessions?: string }>(batchReadQuery, { ...ctx.query });
        return readBatch(batches, deps.stores.sessions, requireAuth(ctx).orgId, ctx.params.batch_id, { sessions: include_sessions !== 'false' });
      },
    },
  ];
}
