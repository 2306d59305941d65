import { NotFoundError } from '../../../../domain/errors.js';
import { messageState, messageView, type MessageDoc } from '../../../../domain/views/message.js';
import { sessionView } from '../../../../domain/views/session.js';
import type { AppDeps } from '../../deps.js';
import { pageOf, requestedPage, sequenceCursor } from '../../pagination.js';
import { requireAuth, type RouteSpec } from '../../types.js';
import { sessionOr404 } from './session-commands.js';
import { messageListResponse, messageResponse, sessionResponse } from './responses.js';

const TRANSCRIPT_MAX = 1000;

function renderText(messages: MessageDoc[]): string {
  const lines: string[] = [];
  for (const m of messages.map(messageState)) {
    lines.push(`user: ${m.parts.map((p) => ('text' in p ? p.text : `[${p.type} ${p.file_id}]`)).join(' ')}`);
    for (const p of m.output.parts) {
      if (p.type === 'text') lines.push(`assistant: ${p.text}`);
      else if (p.type === 'tool_call') lines.push(`assistant called ${p.name}(${JSON.stringify(p.arguments)})`);
      else lines.push(`tool ${p.tool_name}${p.is_error ? ' (error)' : ''}: ${p.content.map((c) => c.text).join(' ')}`);
    }
    if (m.status !== 'completed') lines.push(`[message ${m.status}${m.error ? `: ${m.error}` : ''}]`);
  }
  return lines.join('\n') + '\n';
}

/** Message read models: enough to render a transcript without reading the ledger. */
export function messageRoutes(deps: AppDeps): RouteSpec[] {
  return [
    {
      method: 'GET',
      path: '/v1/sessions/{session_id}/messages',
      summary: 'List the session’s messages in sequence order; `after` is a sequence number.',
      tag: 'messages',
      response: messageListResponse,
      list: { cursor: 'sequence' },
      handler: async (ctx) => {
        const orgId = requireAuth(ctx).orgId;
        const session = await sessionOr404(deps, orgId, ctx.params.session_id);
        const page = requestedPage(ctx);
        const rows = await deps.stores.messages.list(orgId, session._id, page.limit, sequenceCursor(page.after));
        const { items, has_more, next_cursor } = pageOf(rows, page.limit, (m) => String(m.sequence_number));
        return { messages: items.map(messageView), has_more, next_cursor };
      },
    },
    {
      method: 'GET',
      path: '/v1/sessions/{session_id}/messages/{message_id}',
      summary: 'Read one message.',
      tag: 'messages',
      response: messageResponse,
      handler: async (ctx) => {
        const orgId = requireAuth(ctx).orgId;
        await sessionOr404(deps, orgId, ctx.params.session_id);
        const m = await deps.stores.messages.get(orgId, ctx.params.session_id, ctx.params.message_id);
        if (!m) throw new NotFoundError('message', ctx.params.message_id);
        return messageView(m);
      },
    },
    {
      method: 'GET',
      path: '/v1/sessions/{session_id}/transcript',
      summary: 'The whole conversation: JSON by default, plain text with ?format=text.',
      tag: 'messages',
      query: { type: 'object', properties: { format: { type: 'string', enum: ['json', 'text'] } } },
      response: { type: 'object', required: ['session', 'messages', 'truncated'], properties: { session: sessionResponse, messages: { type: 'array', items: messageResponse }, truncated: { type: 'boolean' } } },
      responseContent: { 'text/plain': { type: 'string', description: 'With ?format=text: one line per turn.' } },
      handler: async (ctx) => {
        const orgId = requireAuth(ctx).orgId;
        const session = await sessionOr404(deps, orgId, ctx.params.session_id);
        const rows = await deps.stores.messages.list(orgId, session._id, TRANSCRIPT_MAX, 0);
        const messages = rows.slice(0, TRANSCRIPT_MAX);
        if (ctx.query.format === 'text') {
          ctx.type = 'text/plain; charset=utf-8';
          ctx.body = renderText(messages);
          return undefined;
        }
        return { session: sessionView(session), messages: messages.map(messageView), truncated: rows.length > TRANSCRIPT_MAX };
      },
    },
  ];
}
