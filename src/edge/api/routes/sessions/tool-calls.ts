import { InvalidRequestError } from '../../../../domain/errors.js';
import { messageState } from '../../../../domain/views/message.js';
import type { AppDeps } from '../../deps.js';
import { requireAuth, type RouteSpec } from '../../types.js';
import { sessionOr404 } from './session-commands.js';
import { toolCallListResponse } from './responses.js';

/** Open tool calls, for clients that do not use webhooks (spec: "Without a webhook, clients can…"). */
export function toolCallRoutes(deps: AppDeps): RouteSpec[] {
  const agents = deps.stores.agents;
  return [
    {
      method: 'GET',
      path: '/v1/sessions/{session_id}/tool-calls',
      summary: 'Tool calls of the running message that wait for a result (?status=pending, the only status listed).',
      tag: 'events',
      response: toolCallListResponse,
      handler: async (ctx) => {
        const orgId = requireAuth(ctx).orgId;
        const session = await sessionOr404(deps, orgId, ctx.params.session_id);
        const status = ctx.query.status ?? 'pending';
        if (status !== 'pending') throw new InvalidRequestError('status must be pending.', 'status');
        const doc = session.running_message_id ? await deps.stores.messages.get(orgId, session._id, session.running_message_id) : null;
        if (!doc) return { tool_calls: [] };
        const m = messageState(doc);
        const version = await agents.getVersion(orgId, session.version_id);
        // The schemas ride along so a client can check a result before submitting it, without the stream's
        // tool.call_requested (the same values that event and the webhook carry).
        const tools = new Map((version?.tools ?? []).map((t) => [t.name, t]));
        const args = new Map(m.output.parts.flatMap((p) => (p.type === 'tool_call' ? [[p.id, p.arguments] as const] : [])));
        return {
          tool_calls: m.pending_tool_calls.map((c) => ({
            message_id: m.id,
            tool_call_id: c.id,
            tool_name: c.name,
            kind: tools.get(c.name)?.kind ?? null,
            arguments: args.get(c.id) ?? {},
            input_schema: tools.get(c.name)?.input_schema ?? null,
            output_schema: tools.get(c.name)?.output_schema ?? null,
            status: 'pending',
            expires_at: c.expires_at ?? null,
            awaiting_confirmation: c.awaiting_confirmation === true,
          })),
        };
      },
    },
  ];
}
