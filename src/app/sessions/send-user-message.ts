import { NotFoundError } from '../../domain/errors.js';
import { userMessageCommandId } from '../../domain/actors/session.js';
import { newId } from '../../domain/ids.js';
import type { ContentBlock } from '../../domain/ledger.js';
import type { OnBusy } from '../../domain/session/on-busy.js';
import type { RunningSessionGate } from '../../lib/limits/running-sessions.js';
import type { FileStore } from '../../store/files.js';
import type { SessionStore } from '../../store/sessions.js';
import type { SessionDoc } from '../../domain/views/session.js';
import { checkFileRefs } from './file-refs.js';
import type { Budgets, SessionBudgetFacts } from '../../lib/budgets/budgets.js';
import type { SessionHead } from './session-heads.js';

/**
 * A user message as every intake takes it: `param` names where its content
 * came from in the request (`content`, `parts`, `items[3].message.content`),
 * so an error about one block names that block's field.
 */
export interface UserMessage {
  content: ContentBlock[];
  metadata?: Record<string, string> | null;
  /** What it does if the session is busy; absent: the session's default (decided by the session, which knows it). */
  on_busy?: OnBusy;
  param: string;
}

/**
 * The session command this service builds. It is the `user.message` member
 * of the session actor's command union, written structurally because src/app
 * ranks below actors/ and may not import them.
 */
export interface UserMessageCommand {
  kind: 'user.message';
  command_id: string;
  message_id: string;
  content: ContentBlock[];
  metadata: Record<string, string> | null;
  on_busy?: OnBusy;
}

/** The session a message goes to, as the asker addresses it (a document just read, or a cached head). */
export type SessionRef = SessionDoc | SessionHead;

/** Port to the session actor: delivers the command to the session and answers with its reply. */
export interface SessionAsker<Reply> {
  ask(session: SessionRef, command: UserMessageCommand): Promise<Reply>;
}

/**
 * Where the message goes. `read`: a session read just now (its status is
 * current); `head`: one this process knew and did not read, so admission
 * reads its status only when the org is at its cap; `new`: a message that
 * creates its session, `create` storing it once every check has passed (the
 * caller has already resolved what it will be, so a bad agent or field is
 * refused before this service runs).
 */
export type MessageTarget = { kind: 'read'; session: SessionDoc } | { kind: 'head'; session: SessionHead } | { kind: 'new'; create: () => Promise<SessionDoc>; facts?: SessionBudgetFacts };

export interface SendUserMessagePorts<Reply> {
  files: Pick<FileStore, 'missing'>;
  sessions: Pick<SessionStore, 'get'>;
  /** The running-session cap; absent on a node without limits. */
  gate: Pick<RunningSessionGate, 'admit' | 'admitMessage'> | undefined;
  asker: SessionAsker<Reply>;
  /** Spend budgets; absent, none is checked. */
  budgets?: Pick<Budgets, 'refsOf' | 'check'>;
}

/**
 * The checks on a message's content that need the org's records: every
 * `file_id` names a file of the org (404 file_not_found). Batch items run
 * these too (src/app/batches/plan.ts); the shape and block limits are the
 * request schema's, checked before any of this.
 */
export async function checkUserMessage(files: Pick<FileStore, 'missing'>, orgId: string, message: UserMessage): Promise<void> {
  await checkFileRefs(files, orgId, [{ content: message.content, param: message.param }]);
}

/** Refuses (429) a message that would start a session running past the org's cap. */
async function admit(ports: SendUserMessagePorts<unknown>, orgId: string, target: MessageTarget): Promise<void> {
  const gate = ports.gate;
  if (!gate) return;
  switch (target.kind) {
    case 'new':
      return gate.admit(orgId, null);
    case 'read':
      return gate.admit(orgId, target.session);
    case 'head': {
      const id = target.session._id;
      return gate.admitMessage(orgId, async () => {
        const s = await ports.sessions.get(orgId, id);
        if (!s) throw new NotFoundError('session', id);
        return s;
      });
    }
  }
}

/** Refuses (402 budget_exceeded) a message to a session whose org, creating key or own budget is spent. */
async function checkBudgets(ports: SendUserMessagePorts<unknown>, orgId: string, target: MessageTarget): Promise<void> {
  const budgets = ports.budgets;
  if (!budgets) return;
  const facts = target.kind === 'new' ? (target.facts ?? null) : target.session;
  await budgets.check(orgId, await budgets.refsOf(orgId, null, facts));
}

/**
 * Sends one user message: the intake every endpoint that takes one shares
 * (`POST /v1/sessions/{id}/events`, `/messages/sync`, `POST /v1/agents/{id}/messages`).
 * The order is one for all, and each step is a refusal the next would not
 * undo: the target was resolved by the caller (404 session or agent, the new
 * session's fields), then the content's references (404 file_not_found),
 * then the running-session cap (429, which a client retries, so only a
 * request that could succeed gets it), then the budgets (402 budget_exceeded:
 * the org's, the creating key's, the session's), then the session itself decides
 * (409 agent_deleted, 413 message_too_large, 409 session_queue_full), as
 * the one place that knows its state. The size limit is the session's on
 * purpose: it bounds content plus the output the turn adds, and batch first
 * turns reach it through the same decision. Run inside the Idempotency-Key's
 * claim, so a replay of an accepted message is never refused.
 */
export async function sendUserMessage<Reply>(
  ports: SendUserMessagePorts<Reply>,
  orgId: string,
  target: MessageTarget,
  message: UserMessage,
  idempotencyKey: string | null,
  /** One fixed in advance (a schedule's tick, so every worker that runs it sends the same message); else a new one. */
  messageId = newId('message'),
): Promise<{ message_id: string; reply: Reply }> {
  await checkUserMessage(ports.files, orgId, message);
  await admit(ports, orgId, target);
  await checkBudgets(ports, orgId, target);
  const session = target.kind === 'new' ? await target.create() : target.session;
  const command: UserMessageCommand = { kind: 'user.message', command_id: userMessageCommandId(messageId, idempotencyKey), message_id: messageId, content: message.content, metadata: message.metadata ?? null, ...(message.on_busy ? { on_busy: message.on_busy } : {}) };
  return { message_id: messageId, reply: await ports.asker.ask(session, command) };
}
