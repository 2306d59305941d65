import type { TurnReply } from '../../../../actors/session/turn.js';
import { sessionCommand, type SessionCommand } from '../../../../actors/session/messages.js';
import { InvalidRequestError, NotFoundError } from '../../../domain/errors.js';
import { bodyHash } from '../../../store/idempotency.js';
import type { SessionDoc } from '../../../store/sessions.js';
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

/** Before a user message: refuses (429) one that would start a session running past the org's cap. */
export async function admitUserMessage(deps: AppDeps, orgId: string, session: SessionDoc | null): Promise<void> {
  await deps.limits?.sessions.admit(orgId, session);
}

export function ask(deps: AppDeps, session: SessionDoc, command: SessionCommand): Promise<TurnReply> {
  return runtimeOf(deps).asker.ask<TurnReply>(sessionCommand(session._id, command, session.priority ?? 'interactive'));
}

/**
 * Runs `work` at most once per Idempotency-Key and session: a replay with the
 * same body gets the original response byte for byte, a different body 422,
 * a request still in flight 409. Without the header, `work` just runs.
 */
export async function withIdempotency(ctx: Ctx, deps: AppDeps, scope: string, status: number, work: (key: string | null) => Promise<unknown>): Promise<void> {
  const key = ctx.get('Idempotency-Key') || null;
  if (key !== null && (key.length > 255 || !/^[\x21-\x7e]+$/.test(key))) {
    throw new InvalidRequestError('Idempotency-Key must be 1-255 visible ASCII characters.', 'Idempotency-Key');
  }
  ctx.type = 'application/json';
  if (key === null) {
    ctx.status = status;
    ctx.body = JSON.stringify(await work(null));
    return;
  }
  const claim = await deps.stores.idempotency.claim(scope, key, bodyHash(ctx.state.body));
  if (claim.kind === 'replay') {
    ctx.status = claim.status;
    ctx.set('Idempotent-Replayed', 'true');
    ctx.body = claim.response;
    return;
  }
  try {
    const text = JSON.stringify(await work(key));
    await deps.stores.idempotency.complete(claim.id, status, text);
    ctx.status = status;
    ctx.body = text;
  } catch (err) {
    await deps.stores.idempotency.release(claim.id).catch(() => undefined);
    throw err;
  }
}
