import { NotFoundError, UnsupportedMediaTypeError } from '../../../../domain/errors.js';
import { validateWebhookUrl } from '../../../../lib/net/url-guard.js';
import type { Resolver } from '../../../../lib/net/resolver.js';
import { DEFAULT_EVENT_TYPES } from '../../../../store/webhook-configs.js';
import { webhookConfigView, type WebhookEventType } from '../../../../domain/views/webhook-config.js';
import type { AppDeps } from '../../deps.js';
import { requireAuth, type Ctx, type RouteSpec } from '../../types.js';
import { putWebhookBody, webhookConfigResponse } from './schema.js';

export interface WebhookConfigRouteOptions {
  /** Name resolution for the URL guard; the system resolver unless a test injects one. */
  resolver?: Resolver;
}

/** An agent's webhook configuration (spec: Agent webhook). The signing secret is shown only when created or rotated. */
export function webhookConfigRoutes({ stores, config }: AppDeps, opts: WebhookConfigRouteOptions = {}): RouteSpec[] {
  const store = stores.webhookConfigs;
  /**
   * 404 for an unknown agent or another org's. A soft-deleted agent's webhook can be read and cleared but not
   * configured: `live` (PUT, rotate-secret: a new URL or secret is new work, as a new version or session is) refuses
   * it too, while GET and DELETE answer as before (its sessions and their delivery log are kept, and clearing stops
   * what they still send). The delivery log's routes follow the same rule (webhook-deliveries.ts).
   */
  const agentOf = async (ctx: Ctx, live: boolean): Promise<{ orgId: string; agentId: string }> => {
    const { orgId } = requireAuth(ctx);
    const agentId = ctx.params.agent_id;
    const agent = await store.agent(orgId, agentId);
    if (!agent || (live && agent.deleted)) throw new NotFoundError('agent', agentId);
    return { orgId, agentId };
  };
  return [
    {
      method: 'GET',
      path: '/v1/agents/{agent_id}/webhook',
      summary: 'The agent\u2019s webhook configuration, without the secret.',
      tag: 'webhooks',
      response: webhookConfigResponse,
      handler: async (ctx) => {
        const { orgId, agentId } = await agentOf(ctx, false);
        return webhookConfigView(await store.get(orgId, agentId));
      },
    },
    {
      method: 'PUT',
      path: '/v1/agents/{agent_id}/webhook',
      summary: 'Create or update the agent\u2019s webhook; the signing secret is returned on creation only. 404 for a soft-deleted agent.',
      tag: 'webhooks',
      body: { schema: putWebhookBody },
      response: webhookConfigResponse,
      handler: async (ctx) => {
        // The spec is exact here: application/json itself, not any +json type the body parser accepts.
        if (ctx.request.type.trim().toLowerCase() !== 'application/json') throw new UnsupportedMediaTypeError('application/json');
        const { orgId, agentId } = await agentOf(ctx, true);
        const body = ctx.state.body as { webhook_url: string; event_types?: WebhookEventType[] };
        await validateWebhookUrl(body.webhook_url, { allowPrivate: config.webhooksAllowPrivate, resolver: opts.resolver });
        const eventTypes = body.event_types ? [...new Set(body.event_types)] : [...DEFAULT_EVENT_TYPES];
        // Stored as given, so GET echoes the client's own string; the delivery actor re-parses and re-checks it.
        const { doc, signingSecret } = await store.put(orgId, agentId, body.webhook_url, eventTypes);
        return signingSecret ? { ...webhookConfigView(doc), signing_secret: signingSecret } : webhookConfigView(doc);
      },
    },
    {
      method: 'POST',
      path: '/v1/agents/{agent_id}/webhook/rotate-secret',
      summary: 'Replace the signing secret; the previous one keeps signing for one hour. 404 for a soft-deleted agent.',
      tag: 'webhooks',
      response: webhookConfigResponse,
      handler: async (ctx) => {
        const { orgId, agentId } = await agentOf(ctx, true);
        const rotated = await store.rotate(orgId, agentId);
        if (!rotated) throw new NotFoundError('webhook', agentId);
        return { ...webhookConfigView(rotated.doc), signing_secret: rotated.signingSecret };
      },
    },
    {
      method: 'DELETE',
      path: '/v1/agents/{agent_id}/webhook',
      summary: 'Clear the agent\u2019s webhook configuration.',
      tag: 'webhooks',
      status: 204,
      handler: async (ctx) => {
        const { orgId, agentId } = await agentOf(ctx, false);
        // Idempotent: clearing an already clear configuration is not an error.
        await store.delete(orgId, agentId);
        return undefined;
      },
    },
  ];
}
