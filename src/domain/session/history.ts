import type { MessageState } from '../ledger.js';

/**
 * Whether an earlier message's turn is in the model's history: a completed one, and one a later message
 * interrupted (`on_busy` `interrupt`: its content and output so far stay). A failed or cancelled turn is
 * left out, and so is one a later message rolled back (`on_busy` `rollback`), which the ledger still holds.
 * The built-in loop's conversation and a code agent's `ctx.transcript()` both follow it.
 */
export function inHistory(m: MessageState): boolean {
  return m.status === 'completed' || (m.status === 'cancelled' && m.interrupted === 'interrupt');
}
