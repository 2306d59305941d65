import { InvalidRequestError } from '../../domain/errors.js';
import type { LlmRequest } from '../llm/types.js';
import type { Effort } from '../../domain/providers.js';

export interface EffortPlan {
  /** What routing and execution use: the latest configuration update, else the request-level effort. */
  effective?: Effort;
  /** The body's own effort field. */
  requestLevel?: Effort;
  /** The request carries configuration_update items. */
  updates: boolean;
}

/** Applies the configuration_update rules of the responses format (others never carry updates). */
export function planEffort(req: LlmRequest): EffortPlan {
  let latest: Effort | undefined;
  for (const it of req.items) if (it.kind === 'config_update') latest = it.effort;
  if (latest === undefined) return { effective: req.effort, requestLevel: req.effort, updates: false };
  if (req.effort === undefined) {
    throw new InvalidRequestError('reasoning.effort is required when the input carries a configuration_update item.', 'reasoning.effort', 'effort_required');
  }
  return { effective: latest, requestLevel: req.effort, updates: true };
}

/** The request-level effort of a conversation that uses configuration updates may not change between turns. */
export function checkEffortUnchanged(plan: EffortPlan, stored: Effort | null | undefined, wire: (e: Effort) => string): void {
  if (!plan.updates || stored == null || stored === plan.requestLevel) return;
  throw new InvalidRequestError(
    `reasoning.effort changed from ${wire(stored)} to ${wire(plan.requestLevel!)} within a conversation that uses configuration_update; keep the request-level effort and change it with a configuration_update item instead.`,
    'reasoning.effort',
    'effort_changed',
  );
}
