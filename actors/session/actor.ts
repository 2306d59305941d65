import { defineActor } from '../runtime/actor.js';
import { SESSION, type SessionJob } from './messages.js';
import { runTurn, type SessionPorts } from './turn.js';

/**
 * The session actor: keyed by session id, so a session's commands run one at
 * a time cluster-wide. A turn loads the session, lets the pure `decide`
 * choose events and effects, appends them to the ledger and updates the read
 * models; once the messages are written, the runtime answers the asker,
 * publishes the envelopes and hands the effects to the other actors, in one
 * pipeline, while the session document is written.
 * It never waits on a model, a tool or a webhook.
 */
export const sessionActor = defineActor<SessionJob, SessionPorts>({
  address: SESSION,
  handle: (ctx, job) => runTurn(ctx.ports, job, (early) => ctx.handOff(early)),
});

export type { SessionPorts } from './turn.js';
