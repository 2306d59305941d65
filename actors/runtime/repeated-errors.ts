/** Where the summary lines go: the runtime's log. */
export interface ErrorSink {
  error(obj: object, msg: string): void;
}

interface Seen {
  until: number;
  repeats: number;
  queues: Set<string>;
}

/**
 * Worker errors of one process, logged once per message per window. Each
 * shard queue has its own BullMQ worker, so when Redis goes away every one
 * of them reports the same "connect ECONNREFUSED" on every reconnect: 64
 * shards logged ~65 lines a second, burying everything else. The first
 * occurrence is logged as it comes; repeats within the window are counted
 * and reported, with how many queues saw them, with the first occurrence
 * after the window. No timer, so nothing keeps a stopping process alive.
 */
export class RepeatedErrors {
  private readonly seen = new Map<string, Seen>();

  constructor(
    private readonly sink: ErrorSink,
    private readonly msg: string,
    private readonly windowMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  report(err: string, queue: string): void {
    const t = this.now();
    const s = this.seen.get(err);
    if (s && t < s.until) {
      s.repeats++;
      s.queues.add(queue);
      return;
    }
    const repeats = s?.repeats ?? 0;
    const queues = s?.queues.size ?? 0;
    this.seen.set(err, { until: t + this.windowMs, repeats: 0, queues: new Set() });
    if (this.seen.size > 1000) this.seen.clear(); // distinct messages are few; bound it all the same
    this.sink.error(repeats > 0 ? { err, queue, repeated: repeats, repeated_in_queues: queues } : { err, queue }, this.msg);
  }
}
