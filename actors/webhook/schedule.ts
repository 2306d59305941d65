/**
 * When to retry a failed delivery. Pure, so the schedule's guarantees (at
 * least the configured total, Retry-After respected) are unit-tested directly.
 */

/** Upward-only jitter: spreads retries of an outage's backlog without shortening the schedule. */
export const JITTER = 0.2;

/** The longest Retry-After honoured; a receiver cannot park a delivery for longer than a day. */
export const MAX_RETRY_AFTER_MS = 24 * 3600 * 1000;

/**
 * Delay before retry number `retryIndex` (0 = the first retry), or null when
 * the schedule is exhausted. The delay is the scheduled one plus up to 20 %
 * jitter, and never shorter than the receiver's Retry-After.
 */
export function retryDelayMs(retryIndex: number, scheduleSeconds: readonly number[], retryAfterMs: number | null, random: () => number = Math.random): number | null {
  if (retryIndex < 0 || retryIndex >= scheduleSeconds.length) return null;
  const scheduled = scheduleSeconds[retryIndex] * 1000 * (1 + JITTER * random());
  const asked = retryAfterMs === null ? 0 : Math.min(retryAfterMs, MAX_RETRY_AFTER_MS);
  return Math.round(Math.max(scheduled, asked));
}
