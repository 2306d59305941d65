import type { TurnReply } from '../../../../../actors/session/turn.js';
import { sessionCommand, type SessionCommand } from '../../../../domain/actors/session.js';
import { InvalidRequestError, NotFoundError } from '../../../../domain/errors.js';
import type { SessionDoc } from '../../../../domain/views/session.js';
import type { SessionHead } from '../../../../app/sessions/session-heads.js';
import type { SendUserMessagePorts } from '../../../../app/sessions/send-user-message.js';
import type { AppDeps } from '../../deps.js';
import type { Ctx } from '../../types.js';

export function runtimeOf(deps: AppDeps): NonNullable<AppDeps['sessionsRuntime']> {
  if (!deps.sessionsRuntime) throw new Error('session runtime is not configured on this node');
  return deps.sessionsRuntime;
}

export async function sessionOr404(deps: AppDeps, orgId: string, id: string): Promise<SessionDoc> {
  const s = await deps.stores.sessions.get(orgId, id);
  if (!s) throw new NotFoundError('session', id);
  return s;
}

/**
 * The session a command is for: `read` when it was read just now (its status
 * is current), `head` when this process knew its head and did not read it.
 * Admission tells the two apart by this tag, never by the fields either has.
 */
export type CommandSession = { kind: 'read'; session: SessionDoc } | { kind: 'head'; session: SessionHead };

/**
 * The session a command is for, without reading it when this process knows
 * its head (src/app/sessions/session-heads.ts): the actor reads it anyway, and
 * answers 404 itself for one deleted since.
 */
export async function sessionForCommand(deps: AppDeps, orgId: string, id: string): Promise<CommandSession> {
  const head = deps.sessionHeads?.get(orgId, id);
  if (head) return { kind: 'head', session: head };
  const s = await sessionOr404(deps, orgId, id);
  deps.sessionHeads?.remember(s);
  return { kind: 'read', session: s };
}

/** The ports of the user-message intake (src/app/sessions/send-user-message.ts) on this node. */
export function userMessagePorts(deps: AppDeps): SendUserMessagePorts<TurnReply> {
  return { files: deps.stores.files, sessions: deps.stores.sessions, gate: deps.limits?.sessions, budgets: deps.budgets, asker: { ask: (session, command) => ask(deps, session, command) } };
}

export function ask(deps: AppDeps, session: SessionDoc | SessionHead, command: SessionCommand): Promise<TurnReply> {
  return runtimeOf(deps).asker.ask<TurnReply>(sessionCommand(session._id, command, session.priority ?? 'interactive'));
}

/**
 * The claim `work` runs under: `resourceId` is what an earlier request with
 * the same key had chosen to create before it died (its claim taken over
 * past the lease), and `remember` records the caller's choice before it
 * creates anything, so that a takeover continues it rather than doubling it.
 */
export interface ClaimedWork {
  resourceId: string | null;
  remember(resourceId: string): Promise<void>;
}

/**
 * Runs `work` at most once per Idempotency-Key and session: a replay with the
 * same body gets the original response byte for byte, a different body 422,
 * a request still in flight 409. Without the header, `work` just runs.
 */
export async function withIdempotency(ctx: Ctx, deps: AppDeps, scope: string, status: number, work: (key: string | null, claimed: ClaimedWork | null) => Promise<unknown>): Promise<void> {
  const key = ctx.get('Idempotency-Key') || null;
  if (key !== null && (key.length > 255 || !/^[\x21-\x7e]+$/.test(key))) {
    throw new InvalidRequestError('Idempotency-Key must be 1-255 visible ASCII characters.', 'Idempotency-Key');
  }
  ctx.type = 'application/json';
  if (key === null) {
    ctx.status = status;
    ctx.body = JSON.stringify(await work(null, null));
    return;
  }
  const claim = await deps.stores.idempotency.claim(scope, key, ctx.state.body);
  if (claim.kind === 'replay') {
    ctx.status = claim.status;
    ctx.set('Idempotent-Replayed', 'true');
    ctx.body = claim.response;
    return;
  }
  try {
    const claimed: ClaimedWork = { resourceId: claim.resourceId, remember: (resourceId) => deps.stores.idempotency.remember(claim.id, resourceId) };
    const text = JSON.stringify(await work(key, claimed));
    await deps.stores.idempotency.complete(claim.id, status, text);
    ctx.status = status;
    ctx.body = text;
  } catch (err) {
    await deps.stores.idempotency.release(claim.id).catch(() => undefined);
    throw err;
  }
}
