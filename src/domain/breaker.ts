/**
 * A routing candidate's circuit breaker, as a pure decision over the state every router process shares (kept in
 * Redis by src/lib/routing/health.ts, whose scripts make the same transitions atomically).
 *
 * closed --N consecutive retryable failures--> open --cool-down over, one probe admitted--> half-open
 * half-open --probe succeeds--> closed;  half-open --probe fails--> open again (a fresh cool-down).
 */
export interface BreakerPolicy {
  /** Consecutive retryable failures (errors or timeouts) that open the breaker; 0 turns breakers off. */
  readonly failures: number;
  /** How long an open breaker keeps its candidate out before one probe call is let through. */
  readonly coolDownMs: number;
}

export const DEFAULT_BREAKER: BreakerPolicy = Object.freeze({ failures: 5, coolDownMs: 30_000 });

/** The shared state of one candidate's breaker. */
export interface BreakerView {
  /** Consecutive retryable failures since the last success. */
  failures: number;
  /** When the breaker opened (ms since the epoch); 0 while closed. */
  openedAt: number;
  /** Until when a probe, once admitted, holds the half-open slot; 0 when no probe is out. */
  probeUntil: number;
}

export const CLOSED: BreakerView = Object.freeze({ failures: 0, openedAt: 0, probeUntil: 0 });

/**
 * What a call may do with a candidate now: `try` it (closed), `skip` it (open, or a probe is already out), or
 * ask for the single `probe` (open and cooled down: whoever wins the shared slot tries it).
 */
export type Admission = 'try' | 'skip' | 'probe';

export function admission(v: BreakerView, now: number, p: BreakerPolicy): Admission {
  if (p.failures <= 0 || v.openedAt === 0) return 'try';
  if (now < v.openedAt + p.coolDownMs) return 'skip';
  return v.probeUntil > now ? 'skip' : 'probe';
}

/** After a retryable failure: opens at the threshold, and a failure while half-open (a probe was out) reopens. */
export function afterFailure(v: BreakerView, now: number, p: BreakerPolicy): BreakerView {
  const failures = v.failures + 1;
  if (p.failures <= 0) return { ...v, failures };
  if (v.probeUntil > 0 || (v.openedAt === 0 && failures >= p.failures)) return { failures, openedAt: now, probeUntil: 0 };
  return { ...v, failures };
}

/** A success closes the breaker whatever its state and forgets the failures. */
export function afterSuccess(): BreakerView {
  return CLOSED;
}

/** The probe slot is held for one cool-down: a probe whose process died frees it then. */
export function probeTaken(v: BreakerView, now: number, p: BreakerPolicy): BreakerView {
  return { ...v, probeUntil: now + p.coolDownMs };
}

export type BreakerState = 'closed' | 'open' | 'half_open';

export function stateOf(v: BreakerView, now: number): BreakerState {
  if (v.openedAt === 0) return 'closed';
  return v.probeUntil > now ? 'half_open' : 'open';
}
