/** Where the lines go, at the level the caller chose. */
export type ErrorSink = (obj: object, msg: string) => void;

interface Seen {
  until: number;
  repeats: number;
  queues: Set<string>;
}

/**
 * Errors that many parts of a process report at once, logged once per
 * message per window. When Redis goes away every BullMQ worker (one per
 * shard queue) and every connection (about 70 in a worker) reports the same
 * "connect ECONNREFUSED", the workers on every reconnect: 64 shards logged
 * ~65 lines a second, burying everything else. The first occurrence is
 * logged as it comes; repeats within the window are counted and reported,
 * with how many sources (queues) saw them, with the first occurrence after
 * the window. No timer, so nothing keeps a stopping process alive.
 */
export class RepeatedErrors {
  private readonly seen = new Map<string, Seen>();

  constructor(
    private readonly sink: ErrorSink,
    private readonly msg: string,
    private readonly windowMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** `queue`: which queue's worker reported it, where that tells something; counted in the summary. */
  report(err: string, queue?: string): void {
    const t = this.now();
    const s = this.seen.get(err);
    if (s && t < s.until) {
      s.repeats++;
      if (queue !== undefined) s.queues.add(queue);
      return;
    }
    const repeats = s?.repeats ?? 0;
    const queues = s?.queues.size ?? 0;
    this.seen.set(err, { until: t + this.windowMs, repeats: 0, queues: new Set() });
    if (this.seen.size > 1000) this.seen.clear(); // distinct messages are few; bound it all the same
    const where = queue === undefined ? {} : { queue };
    this.sink(repeats > 0 ? { err, ...where, repeated: repeats, ...(queue === undefined ? {} : { repeated_in_queues: queues }) } : { err, ...where }, this.msg);
  }
}
