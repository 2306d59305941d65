import type { Stores } from '../../store/stores.js';
import type { FirstTurn } from './first-turn.js';

/**
 * Writes the first turns of new sessions: the ledger events and message read
 * models first, then the session documents of the turns whose rows all made
 * it. A session document is what makes a session exist, so a turn that lost
 * a row never becomes a half-written session; its rows are unreachable.
 * Returns the turns that were stored.
 */
export async function writeFirstTurns(stores: Pick<Stores, 'ledger' | 'messages' | 'sessions'>, turns: FirstTurn[]): Promise<{ stored: FirstTurn[]; lost: FirstTurn[] }> {
  const events = turns.flatMap((t) => t.events);
  const owner = turns.flatMap((t) => t.events.map(() => t));
  const [badEvents, badMessages] = await Promise.all([stores.ledger.insertEach(events), stores.messages.insertEach(turns.map((t) => t.message))]);
  const lost = new Set<FirstTurn>();
  for (const i of badEvents) lost.add(owner[i]);
  for (const i of badMessages) lost.add(turns[i]);
  const ready = turns.filter((t) => !lost.has(t));
  const badSessions = await stores.sessions.insertEach(ready.map((t) => t.session));
  for (const i of badSessions) lost.add(ready[i]);
  return { stored: turns.filter((t) => !lost.has(t)), lost: turns.filter((t) => lost.has(t)) };
}
