import { defineActor, type Outcome } from '../runtime/actor.js';
import { messageQuarantine, SESSION, type SessionJob } from '../../src/domain/actors/session.js';
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
  // Poison work: the command's message fails through a turn of its own (decide's `message.quarantine`), in
  // place of the command, so the session takes its next message. A command of no recorded message ends unrun.
  // The turn's early part (envelopes, the next message's model call) goes out with the rest, after the turn.
  onQuarantine: async (ctx, job, error) => {
    const cmd = job.command;
    if (!('message_id' in cmd) || !cmd.message_id) return {};
    // A turn past its budget may still hold this session's state, half applied: this turn reads it afresh.
    ctx.ports.cache.forget(job.session_id);
    const quarantine = messageQuarantine(cmd, cmd.message_id, error);
    let early: Pick<Outcome, 'publish' | 'sends'> = {};
    const rest = await runTurn(ctx.ports, { session_id: job.session_id, command: quarantine }, (part) => (early = part));
    return { publish: [...(early.publish ?? []), ...(rest.publish ?? [])], sends: [...(early.sends ?? []), ...(rest.sends ?? [])] };
  },
});
