/**
 * Bound on one flush's database call. A big batch can fill the socket's
 * buffer; if the server goes away then, the driver waits for a 'drain' that
 * never comes, and every turn behind the flush would wait with it. With a
 * client-side timeout the flush fails instead and its turns are retried.
 */
export const FLUSH_TIMEOUT_MS = 30_000;

export interface Pending<T> {
  item: T;
  resolve(): void;
  reject(err: Error): void;
}

/**
 * How long the flushes in flight must have been out before another starts
 * beside them. A flush of a few turns' writes answers in a few ms; one that
 * takes longer is a big batch's or a slow store's, and a turn should not wait
 * behind it.
 */
export const LANE_AFTER_MS = 20;

/**
 * Writes that many callers make at once share round trips: the writes
 * submitted during one turn of the event loop go out together. One flush
 * runs at a time while the store answers fast, so each carries the writes of
 * every turn that ran meanwhile: the fewest round trips for the load, however
 * few turns a process holds (a worker process of two holds half of them).
 * Once the youngest flush in flight has been out for `laneAfterMs`, another
 * starts beside it, up to `maxInFlight`, so a write never waits long behind a
 * slow one. Alone a write waits for nobody. `flush` settles each entry itself.
 */
export class GroupCommit<T> {
  private queue: Pending<T>[] = [];
  private inFlight = 0;
  private scheduled = false;
  /** When the youngest flush in flight started (performance.now()). */
  private lastStart = 0;
  /** Wakes `schedule` once the flushes in flight are old enough for another lane. */
  private laneTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly flush: (batch: Pending<T>[]) => Promise<void>,
    private readonly maxInFlight = 4,
    private readonly maxBatch = 1000,
    private readonly laneAfterMs = LANE_AFTER_MS,
  ) {}

  submit(item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** Puts entries back at the head of the queue, for the next flush (ordered writes cut short). */
  retry(entries: Pending<T>[]): void {
    this.queue.unshift(...entries);
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight || !this.queue.length) return;
    const wait = this.inFlight ? this.lastStart + this.laneAfterMs - performance.now() : 0;
    if (wait > 0) {
      // The next flush (the one in flight ending, or this timer) takes everything queued meanwhile.
      this.laneTimer ??= setTimeout(() => {
        this.laneTimer = null;
        this.schedule();
      }, Math.ceil(wait));
      return;
    }
    if (this.laneTimer) clearTimeout(this.laneTimer);
    this.laneTimer = null;
    this.scheduled = true;
    // Let the turns already under way in this tick join the flush.
    setImmediate(() => {
      this.scheduled = false;
      void this.flushOnce();
    });
  }

  private async flushOnce(): Promise<void> {
    const batch = this.queue.splice(0, this.maxBatch);
    if (!batch.length) return;
    this.inFlight++;
    this.lastStart = performance.now();
    try {
      await this.flush(batch);
    } catch (err) {
      for (const p of batch) p.reject(err as Error);
    } finally {
      this.inFlight--;
      this.schedule();
    }
  }
}
