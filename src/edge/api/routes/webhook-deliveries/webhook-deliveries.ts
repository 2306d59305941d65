import { redeliverySend } from '../../../../domain/actors/webhook.js';
import { ConflictError, NotFoundError } from '../../../../domain/errors.js';
import { deliveryDetailView, deliveryView, type WebhookDeliveryDoc } from '../../../../domain/views/webhook-delivery.js';
import type { AppDeps } from '../../deps.js';
import { pageOf, requestedPage } from '../../pagination.js';
import { requireAuth, type Ctx, type RouteSpec } from '../../types.js';
import { deliveryListResponse, deliveryResponse } from './schema.js';

/**
 * The webhook delivery log of an agent (issue 7): every event sent to its
 * webhook, each attempt, and redelivery on request. Bodies and secrets are
 * never returned.
 */
export function webhookDeliveryRoutes(deps: AppDeps): RouteSpec[] {
  const { stores } = deps;
  /** 404 for an unknown agent or another org's; a soft-deleted agent keeps its log. */
  const agentOf = async (ctx: Ctx): Promise<{ orgId: string; agentId: string }> => {
    const { orgId } = requireAuth(ctx);
    const agentId = ctx.params.agent_id;
    if (!(await stores.webhookConfigs.agent(orgId, agentId))) throw new NotFoundError('agent', agentId);
    return { orgId, agentId };
  };
  const deliveryOf = async (ctx: Ctx): Promise<WebhookDeliveryDoc> => {
    const { orgId, agentId } = await agentOf(ctx);
    const d = await stores.webhookDeliveries.get(orgId, agentId, ctx.params.delivery_id);
    if (!d) throw new NotFoundError('delivery', ctx.params.delivery_id);
    return d;
  };
  return [
    {
      method: 'GET',
      path: '/v1/agents/{agent_id}/webhook/deliveries',
      summary: 'The agent\u2019s webhook deliveries, newest first.',
      tag: 'webhooks',
      list: { cursor: 'delivery' },
      response: deliveryListResponse,
      handler: async (ctx) => {
        const { orgId, agentId } = await agentOf(ctx);
        const page = requestedPage(ctx);
        const rows = await stores.webhookDeliveries.list(orgId, agentId, page.limit, page.after);
        const { items, has_more, next_cursor } = pageOf(rows, page.limit, (d) => d._id);
        return { deliveries: items.map(deliveryView), has_more, next_cursor };
      },
    },
    {
      method: 'GET',
      path: '/v1/agents/{agent_id}/webhook/deliveries/{delivery_id}',
      summary: 'One webhook delivery with each of its attempts.',
      tag: 'webhooks',
      response: deliveryResponse,
      handler: async (ctx) => deliveryDetailView(await deliveryOf(ctx)),
    },
    {
      method: 'POST',
      path: '/v1/agents/{agent_id}/webhook/deliveries/{delivery_id}/redeliver',
      summary: 'Send a delivery again now, with the same webhook id and body; the attempt is added to its log.',
      errors: [409],
      tag: 'webhooks',
      response: deliveryResponse,
      handler: async (ctx) => {
        const d = await deliveryOf(ctx);
        const target = await stores.webhookConfigs.deliveryTarget(d.org_id, d.agent_id);
        if (!target) throw new ConflictError('The agent has no webhook configured.', 'webhook_not_configured');
        if (target.disabled) throw new ConflictError('The webhook is disabled after its receiver answered 410; PUT it again to re-enable.', 'webhook_disabled');
        await deps.outbox.send([redeliverySend({ org_id: d.org_id, agent_id: d.agent_id, delivery_id: d._id })]);
        return deliveryView(d);
      },
    },
  ];
}
