import { messageCancel, toolConfirmationCommandId, toolResultCommandId } from '../../../../domain/actors/session.js';
import { endedMessageId, TERMINAL_MESSAGE_STATUSES, type ContentBlock } from '../../../../domain/ledger.js';
import { decodeSessionEvents } from '../../../../lib/pubsub/session-events.js';
import { envelope } from '../../../../store/ledger.js';
import { messageView } from '../../../../domain/views/message.js';
import type { OnBusy } from '../../../../domain/session/on-busy.js';
import type { AppDeps } from '../../deps.js';
import { pageOf, requestedPage, sequenceCursor } from '../../pagination.js';
import { NotFoundError } from '../../../../domain/errors.js';
import { sendUserMessage } from '../../../../app/sessions/send-user-message.js';
import { requireAuth, type RouteSpec } from '../../types.js';
import { ask, runtimeOf, sessionForCommand, sessionOr404, userMessagePorts, withIdempotency } from './session-commands.js';
import { postEventBody, syncBody } from './schema.js';
import { eventListResponse, messageResponse, turnReplyResponse } from './responses.js';
import { sessionIdempotencyScope } from '../../../../app/sessions/delete-session.js';

type PostedEvent =
  | { type: 'user.message'; content: ContentBlock[]; metadata?: Record<string, string>; on_busy?: OnBusy }
  | { type: 'tool.result_submitted'; message_id: string; tool_call_id: string; result?: unknown; is_error?: boolean }
  | { type: 'user.tool_confirmation'; message_id: string; tool_call_id: string; result: 'allow' | 'deny'; deny_message?: string };

/** Resolves when the message reaches a terminal status, or at the deadline; true if terminal. */
async function waitForTerminal(deps: AppDeps, orgId: string, sessionId: string, messageId: string, ms: number): Promise<boolean> {
  const { hub } = runtimeOf(deps);
  let done!: (v: boolean) => void;
  const finished = new Promise<boolean>((r) => (done = r));
  const unsubscribe = await hub.subscribe(deps.keys.sessionEvents(sessionId), (raw) => {
    for (const { ev } of decodeSessionEvents(raw)) {
      if (endedMessageId(ev) === messageId) done(true);
    }
  });
  const timer = setTimeout(() => done(false), ms);
  // A shutting-down process answers now (202 with the message to poll) rather than being cut off.
  const offDrain = deps.drain?.onDrain(() => done(false)) ?? (() => undefined);
  // Pub/sub can miss a message across a reconnect; the read model cannot.
  const poll = setInterval(() => {
    void deps.stores.messages.get(orgId, sessionId, messageId).then((m) => m && TERMINAL_MESSAGE_STATUSES.includes(m.status) && done(true), () => undefined);
  }, 2000);
  try {
    const m = await deps.stores.messages.get(orgId, sessionId, messageId);
    if (m && TERMINAL_MESSAGE_STATUSES.includes(m.status)) return true;
    return await finished;
  } finally {
    clearTimeout(timer);
    offDrain();
    clearInterval(poll);
    unsubscribe();
  }
}

/** Appending to the ledger, reading it, cancelling, and the synchronous wait. */
export function eventRoutes(deps: AppDeps): RouteSpec[] {
  return [
    {
      method: 'POST',
      path: '/v1/sessions/{session_id}/events',
      summary: 'Append a user.message, tool.result_submitted or user.tool_confirmation event. Honours Idempotency-Key. A session whose agent was deleted takes no user.message (409 agent_deleted); tool results and confirmations for work it has still are. A second answer to one confirmation is a 409.',
      errors: [402, 409, 422],
      tag: 'events',
      response: turnReplyResponse,
      body: { schema: postEventBody },
      status: 201,
      handler: async (ctx) => {
        const orgId = requireAuth(ctx).orgId;
        const target = await sessionForCommand(deps, orgId, ctx.params.session_id);
        const session = target.session;
        const body = ctx.state.body as PostedEvent;
        await withIdempotency(ctx, deps, sessionIdempotencyScope(session._id), 201, async (key) => {
          if (body.type === 'user.message') {
            const sent = await sendUserMessage(userMessagePorts(deps), orgId, target, { content: body.content, metadata: body.metadata, on_busy: body.on_busy, param: 'content' }, key);
            return sent.reply;
          }
          // Each submission is its own command: a second one for the same call
          // must reach the actor and be refused (409). Replays are the
          // Idempotency-Key's job, answered above without reaching the actor.
          if (body.type === 'user.tool_confirmation') {
            return ask(deps, session, {
              kind: 'tool.confirmation',
              command_id: toolConfirmationCommandId(key),
              message_id: body.message_id,
              tool_call_id: body.tool_call_id,
              result: body.result,
              ...(body.deny_message !== undefined ? { deny_message: body.deny_message } : {}),
            });
          }
          return ask(deps, session, {
            kind: 'tool.result_submitted',
            command_id: toolResultCommandId(key),
            message_id: body.message_id,
            tool_call_id: body.tool_call_id,
            result: body.result ?? null,
            is_error: body.is_error ?? false,
          });
        });
        return undefined;
      },
    },
    {
      method: 'GET',
      path: '/v1/sessions/{session_id}/events',
      summary: 'Read the session ledger in sequence order; `after` is a sequence number.',
      tag: 'events',
      response: eventListResponse,
      list: { cursor: 'sequence' },
      handler: async (ctx) => {
        const session = await sessionOr404(deps, requireAuth(ctx).orgId, ctx.params.session_id);
        const page = requestedPage(ctx);
        const rows = await deps.stores.ledger.after(session._id, sequenceCursor(page.after), page.limit + 1);
        const { items, has_more, next_cursor } = pageOf(rows, page.limit, (e) => String(e.sequence_number));
        return { events: items.map(envelope), has_more, next_cursor };
      },
    },
    {
      method: 'POST',
      path: '/v1/sessions/{session_id}/messages/{message_id}/cancel',
      summary: 'Cancel a queued or running message.',
      errors: [409],
      tag: 'messages',
      response: turnReplyResponse,
      handler: async (ctx) => {
        const { session } = await sessionForCommand(deps, requireAuth(ctx).orgId, ctx.params.session_id);
        return ask(deps, session, messageCancel(ctx.params.message_id));
      },
    },
    {
      method: 'POST',
      path: '/v1/sessions/{session_id}/messages/sync',
      summary: 'Send a message and wait for its terminal status; 202 with the current message past the wait bound. 409 agent_deleted when the session’s agent was deleted.',
      errors: [402, 409],
      alsoSucceeds: { 202: 'The wait bound (or a shutdown) came first: the message as it stands, not yet terminal; poll it or follow the stream.' },
      tag: 'messages',
      response: messageResponse,
      body: { schema: syncBody },
      handler: async (ctx) => {
        const orgId = requireAuth(ctx).orgId;
        const target = await sessionForCommand(deps, orgId, ctx.params.session_id);
        const session = target.session;
        const body = ctx.state.body as { parts: ContentBlock[]; metadata?: Record<string, string>; on_busy?: OnBusy };
        // No Idempotency-Key here (the spec gives it to the events endpoint only): each call is a new message.
        const { message_id: messageId } = await sendUserMessage(userMessagePorts(deps), orgId, target, { content: body.parts, metadata: body.metadata, on_busy: body.on_busy, param: 'parts' }, null);
        const terminal = await waitForTerminal(deps, orgId, session._id, messageId, deps.config.syncWaitMs);
        const m = await deps.stores.messages.get(orgId, session._id, messageId);
        if (!m) throw new NotFoundError('message', messageId);
        ctx.status = terminal ? 200 : 202;
        ctx.body = messageView(m);
        return undefined;
      },
    },
  ];
}
