import { messageCancel, sessionDelete } from '../../../../domain/actors/session.js';
import { InvalidRequestError, NotFoundError, TroupeError } from '../../../../domain/errors.js';
import { check, type JsonSchema } from '../../../../lib/schemas/validator.js';
import { sessionBusy } from '../../../../app/sessions/delete-session.js';
import { newId } from '../../../../domain/ids.js';
import type { ContentBlock } from '../../../../domain/ledger.js';
import type { OnBusy } from '../../../../domain/session/on-busy.js';
import { buildSession, versionFor, type SessionInput } from '../../../../app/sessions/create-session.js';
import { sessionView, type SessionDoc } from '../../../../domain/views/session.js';
import type { AppDeps } from '../../deps.js';
import { pageOf, requestedPage } from '../../pagination.js';
import { sendUserMessage, type MessageTarget } from '../../../../app/sessions/send-user-message.js';
import { requireAuth, type RouteSpec } from '../../types.js';
import { ask, sessionOr404, userMessagePorts, withIdempotency } from './session-commands.js';
import { agentMessageBody, createSessionBody } from './schema.js';
import { sessionListResponse, sessionResponse, turnReplyResponse } from './responses.js';

const METADATA_PARAM = /^metadata\.([A-Za-z0-9_-]{1,64})$/;

function metadataFilters(query: Record<string, string | string[] | undefined>): Record<string, string> {
  const filters: Record<string, string> = {};
  for (const [k, v] of Object.entries(query)) {
    if (!k.startsWith('metadata.')) continue;
    const m = METADATA_PARAM.exec(k);
    // No stored session has such a key (metadataSchema), so dropping the filter would list sessions it meant to exclude.
    if (!m) throw new InvalidRequestError(`metadata.<key> needs a key of 1-64 characters from [A-Za-z0-9_-], as session metadata keys are; got ${JSON.stringify(k)}.`, k);
    if (typeof v !== 'string') throw new InvalidRequestError(`${k} may be given once.`, k);
    filters[m[1]] = v;
  }
  return filters;
}

const deleteSessionQuery: JsonSchema = {
  type: 'object',
  properties: { force: { type: 'string', enum: ['true', 'false'], description: 'true: cancel a running or queued message first.' } },
};

/** Cancels the running message and every queued one; one that finished meanwhile is fine. */
async function cancelAll(deps: AppDeps, session: SessionDoc): Promise<void> {
  for (const id of [session.running_message_id, ...session.queued_message_ids]) {
    if (!id) continue;
    try {
      await ask(deps, session, messageCancel(id));
    } catch (err) {
      if (!(err instanceof TroupeError) || (err.status !== 409 && err.status !== 404)) throw err;
    }
  }
}

/** Session creation and reads (spec: Sessions), and the one-shot agent message. */
export function sessionRoutes(deps: AppDeps): RouteSpec[] {
  const agents = deps.stores.agents;
  const bindings = deps.stores.storageBindings;
  // Resolving and storing are apart so that a message which creates its session is refused for a bad agent or
  // field before its content and the running-session cap are checked, and the session is stored only once they pass.
  const prepare = async (orgId: string, agentId: string, input: SessionInput, id?: string, apiKeyId?: string) => {
    const version = await versionFor(agents, orgId, agentId);
    const bindingId = input.storage_binding_id;
    if (bindingId && !(await bindings.live(orgId, bindingId))) throw new NotFoundError('storage_binding', bindingId);
    return buildSession(deps.box, orgId, version, input, { priority: 'interactive', api_key_id: apiKeyId }, id);
  };
  const store = async (doc: SessionDoc) => {
    await deps.stores.sessions.insert(doc);
    const bindingId = doc.storage_binding_id;
    // A DELETE of the binding may have claimed it between the check and the insert: then it saw no session, so undo ours.
    if (bindingId && !(await bindings.live(doc.org_id, bindingId))) {
      await deps.stores.sessions.remove(doc.org_id, doc._id);
      throw new NotFoundError('storage_binding', bindingId);
    }
    deps.sessionHeads?.remember(doc);
    return doc;
  };
  const create = async (orgId: string, agentId: string, input: SessionInput, apiKeyId?: string) => store(await prepare(orgId, agentId, input, undefined, apiKeyId));
  return [
    {
      method: 'POST',
      path: '/v1/agents/{agent_id}/sessions',
      summary: 'Create a durable session on the agent’s active version.',
      errors: [409],
      tag: 'sessions',
      response: sessionResponse,
      body: { schema: createSessionBody, optional: true },
      status: 201,
      handler: async (ctx) => sessionView(await create(requireAuth(ctx).orgId, ctx.params.agent_id, ctx.state.body as SessionInput, ctx.state.auth?.key._id)),
    },
    {
      method: 'GET',
      path: '/v1/sessions/{session_id}',
      summary: 'Read a session.',
      tag: 'sessions',
      response: sessionResponse,
      handler: async (ctx) => sessionView(await sessionOr404(deps, requireAuth(ctx).orgId, ctx.params.session_id)),
    },
    {
      method: 'DELETE',
      path: '/v1/sessions/{session_id}',
      summary: 'Delete a session with its ledger, messages and idempotency records; 409 while a message runs unless force=true, which cancels it first.',
      errors: [409],
      tag: 'sessions',
      query: deleteSessionQuery,
      status: 204,
      handler: async (ctx) => {
        const session = await sessionOr404(deps, requireAuth(ctx).orgId, ctx.params.session_id);
        const force = check<{ force?: string }>(deleteSessionQuery, { ...ctx.query }).force === 'true';
        if (sessionBusy(session) && force) await cancelAll(deps, session);
        await ask(deps, session, sessionDelete({ request: ctx.state.requestId }));
        return undefined;
      },
    },
    {
      method: 'GET',
      path: '/v1/sessions',
      summary: 'List sessions, newest first; every metadata.<key>=<value> parameter must match (AND). A filtered page looks at 1,000 sessions at most, so it may hold fewer rows than limit, even none, with has_more true: follow next_cursor.',
      tag: 'sessions',
      response: sessionListResponse,
      list: { cursor: 'session' },
      handler: async (ctx) => {
        const page = requestedPage(ctx);
        const { rows, walkedTo } = await deps.stores.sessions.list(requireAuth(ctx).orgId, metadataFilters(ctx.query), page.limit, page.after);
        const { items, has_more, next_cursor } = pageOf(rows, page.limit, (s) => s._id);
        // A filtered page whose bounded walk ended first: fewer rows, and the walk goes on from where it stopped.
        if (walkedTo) return { sessions: items.map(sessionView), has_more: true, next_cursor: walkedTo };
        return { sessions: items.map(sessionView), has_more, next_cursor };
      },
    },
    {
      method: 'POST',
      path: '/v1/agents/{agent_id}/messages',
      summary: 'Create a session and send its first user message in one request.',
      errors: [402, 409, 422],
      tag: 'sessions',
      response: turnReplyResponse,
      body: { schema: agentMessageBody },
      status: 201,
      handler: async (ctx) => {
        const orgId = requireAuth(ctx).orgId;
        const body = ctx.state.body as { content: ContentBlock[]; metadata?: Record<string, string>; on_busy?: OnBusy; session?: SessionInput };
        await withIdempotency(ctx, deps, `agent-messages:${orgId}:${ctx.params.agent_id}`, 201, async (key, claimed) => {
          // The session id is recorded under the claim before the session exists: a retry that takes over the
          // claim of a request that died continues that request's session (the ask is deduplicated by its
          // command id, derived from the key) instead of creating a second one.
          const sessionId = claimed?.resourceId ?? newId('session');
          const earlier = claimed?.resourceId ? await deps.stores.sessions.get(orgId, sessionId) : null;
          // The agent and the session's fields are resolved first (404, 400); the session is stored only once the
          // message has passed its checks. One that continues an earlier request is admitted as new, as that request was.
          let target: MessageTarget;
          if (earlier) {
            target = { kind: 'new', create: async () => earlier, facts: earlier };
          } else {
            const doc = await prepare(orgId, ctx.params.agent_id, body.session ?? {}, sessionId, ctx.state.auth?.key._id);
            target = { kind: 'new', create: async () => (await claimed?.remember(sessionId), store(doc)), facts: doc };
          }
          const sent = await sendUserMessage(userMessagePorts(deps), orgId, target, { content: body.content, metadata: body.metadata, on_busy: body.on_busy, param: 'content' }, key);
          return sent.reply;
        });
        return undefined;
      },
    },
  ];
}
