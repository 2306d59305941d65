import { standing } from '../../domain/budget.js';
import type { EventData } from '../../domain/event-data.js';
import type { Crossing } from './budget-counters.js';

/** A crossing as `budget.threshold_reached` carries it, in the ledger and in the webhook alike. */
export function thresholdData(c: Crossing, now: number): EventData['budget.threshold_reached'] {
  const s = standing(c.ref, c.spentMicros, now);
  return { scope: s.scope, id: s.id, threshold: c.threshold, amount_usd: s.amount_usd, period: s.period, spent_usd: s.spent_usd, resets_at: s.resets_at };
}
