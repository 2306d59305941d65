/** How one message's handling ended. */
/** `quarantined`: not run, because it stalled or crashed its worker too often (RuntimeOptions.poisonStalls). */
export type TurnResult = 'done' | 'rejected' | 'later' | 'failed' | 'quarantined';

export interface TurnRecord {
  actor: string;
  /** The BullMQ queue (a keyed actor's shard queue). */
  queue: string;
  job_id: string;
  attempt: number;
  result: TurnResult;
  /** Time spent in the handler and the hand-off, in milliseconds. */
  duration_ms: number;
  /** Time from enqueue to start, in milliseconds (queueing delay). */
  waited_ms: number;
  error?: string;
}

/**
 * Sees every message every actor handles: the hook for metrics (turn
 * durations, queueing delay, failures). It must not throw or block; the
 * runtime calls it after the hand-off.
 */
export interface TurnObserver {
  turn(record: TurnRecord): void;
}

export const NO_OBSERVER: TurnObserver = Object.freeze({ turn: () => undefined });
