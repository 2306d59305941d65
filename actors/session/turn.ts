import { NotFoundError } from '../../src/domain/errors.js';
import { type EventEnvelope, type MessageState, type SessionState } from '../../src/domain/ledger.js';
import { effectsOf, envelope, toEventDoc, type EventDoc, type LedgerStore } from '../../src/store/ledger.js';
import type { MessageStore } from '../../src/store/messages.js';
import { messageState } from '../../src/domain/views/message.js';
import { sessionState, type SessionStore } from '../../src/store/sessions.js';
import { sessionView, type SessionDoc, type SessionView } from '../../src/domain/views/session.js';
import type { AgentVersionDoc } from '../../src/store/agents.js';
import { encodeSessionEvents } from '../../src/lib/pubsub/session-events.js';
import type { Outcome, Publication } from '../runtime/actor.js';
import { decide } from '../../src/domain/session/decide.js';
import { abortedMessages, afterCommit, effectSends } from '../../src/domain/session/effects.js';
import type { Effect, SessionJob } from '../../src/domain/actors/session.js';
import { agentContext } from '../../src/app/sessions/agent-context.js';
import type { AgentContext, Decision } from '../../src/domain/session/decision.js';
import { stillOwed } from '../../src/domain/session/outstanding.js';
import type { SessionCache } from './session-cache.js';
import { applyEvent, noteCommand } from '../../src/domain/session/projection.js';
import { deleteSessionTurn } from './delete.js';
import { isDuplicateKey } from '../../src/store/duplicate-key.js';

/** What the session actor needs, and nothing more; the composition root wires the real ones. */
export interface SessionPorts {
  sessions: Pick<SessionStore, 'byId'>;
  /** Appends a turn's events; a duplicate key (code 11000) means another writer took the sequence. */
  ledger: Pick<LedgerStore, 'append' | 'after' | 'get'>;
  messages: Pick<MessageStore, 'byIds'>;
  /** Writes the read models of a turn (many turns' writes share a round trip: src/store/projection-writer.ts). */
  projections: { save(orgId: string, session: SessionState, messages: MessageState[], afterMessages?: () => void): Promise<void> };
  versions: { get(orgId: string, id: string): Promise<AgentVersionDoc | null> };
  /** The pub/sub channel of a session's ledger envelopes. */
  eventsChannel(sessionId: string): string;
  /** The pub/sub channel on which workers hear that a message's work must stop (src/lib/pubsub/cancels.ts). */
  cancelsChannel: string;
  /** Deletes a session and everything recorded under it (src/app/sessions/delete-session.ts). */
  purge(orgId: string, sessionId: string): Promise<void>;
  publicUrl: string;
  cache: SessionCache;
}

export type TurnDeps = SessionPorts;

/** What the asking web node gets back: the spec's `{event, message, session}`. */
export interface TurnReply {
  event: EventEnvelope | null;
  message: { id: string; status: string } | null;
  session: SessionView;
}

/** Thrown when another writer took a sequence number first; the turn catches up and decides again. */
export class SequenceConflict extends Error {
  override name = 'SequenceConflict';
}

interface Loaded {
  doc: SessionDoc;
  state: SessionState;
  messages: Map<string, MessageState>;
  touched: Set<string>;
  /** Envelopes to publish once the turn's writes are done (catch-up included). */
  publish: EventEnvelope[];
  /** Caught up from the ledger: the read models must be saved even if the command adds nothing. */
  dirty: boolean;
}

async function loadMessages(deps: TurnDeps, l: Loaded, ids: (string | null | undefined)[]): Promise<void> {
  const missing = [...new Set(ids.filter((id): id is string => !!id && !l.messages.has(id)))];
  for (const m of await deps.messages.byIds(l.state.id, missing)) l.messages.set(m._id, messageState(m));
}

function apply(l: Loaded, envelopes: EventEnvelope[]): void {
  for (const ev of envelopes) {
    applyEvent(l.state, l.messages, ev);
    if (ev.message_id) l.touched.add(ev.message_id);
  }
}

/**
 * Catches the read models up with the ledger: a turn that crashed between
 * append and projection is healed here, by the next turn of the session.
 * Returns whether there was anything to catch up.
 */
async function catchUp(deps: TurnDeps, l: Loaded): Promise<boolean> {
  let found = false;
  for (;;) {
    const docs = await deps.ledger.after(l.state.id, l.state.last_sequence, 500);
    if (!docs.length) return found;
    found = true;
    await loadMessages(deps, l, docs.map((d) => d.message_id));
    apply(l, docs.map(envelope));
    for (const d of docs) if (d.command_id) noteCommand(l.state, d.command_id, d.sequence_number);
    l.dirty = true;
    // The turn that wrote them may have died before publishing; streams drop duplicates.
    l.publish.push(...docs.map(envelope));
  }
}

async function save(deps: TurnDeps, l: Loaded, afterMessages?: () => void): Promise<void> {
  await deps.projections.save(l.doc.org_id, l.state, [...l.touched].map((id) => l.messages.get(id)!).filter(Boolean), afterMessages);
  l.touched.clear();
  l.dirty = false;
  deps.cache.remember(l.doc, l.state, l.messages);
}

/**
 * The session as this worker last saved it, else the read model. The copy is
 * trusted without asking anyone: if another worker has moved the session on
 * since, this turn's append hits the ledger's sequence fence, and the turn
 * catches up from the ledger and decides again.
 */
async function load(deps: TurnDeps, sessionId: string): Promise<Loaded> {
  const hit = deps.cache.take(sessionId);
  if (hit) return { doc: hit.doc, state: sessionState(hit.doc), messages: hit.messages, touched: new Set(), publish: [], dirty: false };
  const doc = await deps.sessions.byId(sessionId);
  if (!doc) throw new NotFoundError('session', sessionId);
  return { doc, state: sessionState(doc), messages: new Map(), touched: new Set(), publish: [], dirty: false };
}

/** The messages a command may act on; a new user message's id is fresh, so there is nothing to read for it. */
function referenced(l: Loaded, cmd: SessionJob['command'] | null): (string | null)[] {
  return [l.state.running_message_id, ...l.state.queued_message_ids, cmd && cmd.kind !== 'user.message' && 'message_id' in cmd ? cmd.message_id : null];
}

/** The session document as this turn leaves it (written by `save`). */
function current(l: Loaded): SessionDoc {
  const { id: _id, ...state } = l.state;
  return { ...l.doc, ...state };
}

function reply(l: Loaded, event: EventEnvelope | null, messageId: string | null): TurnReply {
  const m = messageId ? l.messages.get(messageId) : undefined;
  return { event, message: m ? { id: m.id, status: m.status } : null, session: sessionView(current(l)) };
}

/**
 * A replayed user message is answered as the first answer was (decide's
 * `as_of`): as recorded. What recording one leaves is fixed by the spec's
 * transitions, whatever the session did since: running, with this message
 * its last, queued.
 */
function asRecorded(r: TurnReply): TurnReply {
  if (!r.message) return r;
  const status = 'queued';
  return { ...r, message: { ...r.message, status }, session: { ...r.session, status: 'running', last_message_id: r.message.id, last_message_status: status } };
}

async function append(deps: TurnDeps, l: Loaded, decision: Decision, commandId: string): Promise<EventEnvelope[]> {
  const now = new Date();
  const docs: EventDoc[] = decision.events.map((e, i) =>
    toEventDoc(l.doc.org_id, l.state.id, l.state.last_sequence + 1 + i, e, now, i === 0 ? { command_id: commandId, effects: decision.effects, reply_offset: decision.reply.event_index } : {}),
  );
  try {
    await deps.ledger.append(docs);
  } catch (err) {
    if (isDuplicateKey(err)) throw new SequenceConflict(`session ${l.state.id}: sequence ${docs[0].sequence_number} already taken`);
    throw err;
  }
  return docs.map(envelope);
}

function publications(deps: TurnDeps, l: Loaded): Publication[] {
  // One message for the whole turn (src/lib/pubsub/session-events.ts).
  return l.publish.length ? [{ channel: deps.eventsChannel(l.state.id), payload: encodeSessionEvents(l.publish) }] : [];
}

/** Aborts go out first, so workers stop a cancelled message's work before clients hear of the cancel. */
function outcome(deps: TurnDeps, l: Loaded, value: TurnReply, effects: readonly Effect[]): Outcome {
  const aborts = abortedMessages(effects).map((message_id): Publication => ({ channel: deps.cancelsChannel, payload: JSON.stringify({ session_id: l.state.id, message_id }) }));
  return { reply: value, publish: [...aborts, ...publications(deps, l)], sends: effectSends(current(l), effects) };
}

/**
 * Answers a command that was applied before (a redelivery after a crash, or a
 * repeated request), and hands off again those of its effects the session
 * still waits on (`stillOwed`): the rest have run, and their completed jobs
 * may be gone, so re-sending them would run them again.
 */
async function replay(deps: TurnDeps, l: Loaded, firstSequence: number, agent: AgentContext): Promise<Outcome | null> {
  const first = await deps.ledger.get(l.state.id, firstSequence);
  if (!first) return null;
  const answer = first.reply_offset ? await deps.ledger.get(l.state.id, firstSequence + first.reply_offset) : first;
  await loadMessages(deps, l, [first.message_id, answer?.message_id, ...referenced(l, null)]);
  if (l.dirty) await save(deps, l);
  const effects = stillOwed(effectsOf(first) as Effect[], { session: l.state, messages: l.messages, agent });
  // The answer's message, not the first event's: an `on_busy` interrupt writes the running message's cancel first.
  const shown = answer ?? first;
  const answered = reply(l, envelope(shown), shown.message_id ?? first.message_id);
  return outcome(deps, l, shown.type === 'user.message' ? asRecorded(answered) : answered, effects);
}

const MAX_CONFLICTS = 3;

/**
 * One turn of a session actor: load, decide, append, project, publish, hand
 * off effects. Never waits on a model, a tool or a webhook.
 *
 * The ledger is only probed for events the read model missed (a turn that
 * died between append and projection) when it matters: when the append hits
 * the unique (session_id, sequence_number) fence, or before concluding that a
 * command changes nothing. On FerretDB a probe for a missing row scans the
 * whole ledger, so the common path must not pay for it.
 */
export async function runTurn(deps: TurnDeps, job: SessionJob, handOff: HandOff = () => undefined): Promise<Outcome> {
  try {
    if (job.command.kind === 'session.delete') return await deleteSessionTurn(deps, job.session_id);
    return await turn(deps, job, handOff);
  } catch (err) {
    // Whatever this turn held in memory may be half-applied; the next one reloads.
    deps.cache.forget(job.session_id);
    throw err;
  }
}

/**
 * Carries out part of the outcome at once (the runtime's ctx.handOff); the
 * turn then returns only the rest.
 */
export type HandOff = (early: Pick<Outcome, 'reply' | 'publish' | 'sends'>) => void;

/**
 * The turn's reply, envelopes and hand-offs go out in one pipeline as soon
 * as the events are in the ledger and the messages written, while the
 * session document is written; only what reads that document waits for it
 * (`afterCommit`). A crash in between is a replay: see docs/decisions.md,
 * "The turn hands off before the session document is written".
 */
async function turn(deps: TurnDeps, job: SessionJob, handOff: HandOff): Promise<Outcome> {
  const l = await load(deps, job.session_id);
  const doc = l.doc;
  const cmd = job.command;
  const version = await deps.versions.get(doc.org_id, doc.version_id);
  let caughtUp = false;
  for (let attempt = 0; ; attempt++) {
    const seen = l.state.recent_commands.find((c) => c.id === cmd.command_id);
    const replayed = seen ? await replay(deps, l, seen.seq, agentContext(doc, version, deps.publicUrl)) : null;
    if (replayed) return replayed;
    await loadMessages(deps, l, referenced(l, cmd));
    const decision = decide({ session: l.state, messages: l.messages, agent: agentContext(doc, version, deps.publicUrl) }, cmd);
    if (decision.events.length === 0 && !caughtUp) {
      caughtUp = true;
      if (await catchUp(deps, l)) continue;
    }
    let envs: EventEnvelope[];
    try {
      envs = await append(deps, l, decision, cmd.command_id);
    } catch (err) {
      if (!(err instanceof SequenceConflict) || attempt >= MAX_CONFLICTS) throw err;
      caughtUp = true;
      await catchUp(deps, l);
      continue;
    }
    // The reply is taken when the first `as_of` events are applied: one moment for its message and session.
    const asOf = decision.reply.as_of ?? envs.length;
    apply(l, envs.slice(0, asOf));
    const value = reply(l, decision.reply.event_index === null ? null : envs[decision.reply.event_index], decision.reply.message_id);
    apply(l, envs.slice(asOf));
    if (envs.length) noteCommand(l.state, cmd.command_id, envs[0].sequence_number);
    l.publish.push(...envs);
    // Nothing to write: nothing to wait for either, so the whole outcome goes out as the turn returns.
    if (!envs.length && !l.dirty) return outcome(deps, l, value, decision.effects);
    const early = outcome(deps, l, value, decision.effects.filter((e) => !afterCommit(e)));
    await save(deps, l, () => handOff(early));
    return { sends: effectSends(current(l), decision.effects.filter(afterCommit)) };
  }
}
