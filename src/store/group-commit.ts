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
 * Writes that many callers make at once share round trips: the writes
 * submitted during one turn of the event loop go out together. Up to
 * `maxInFlight` flushes run at once, so a write never waits behind more
 * than that many others; under load each flush carries the writes of every
 * turn that ran meanwhile, alone a write waits for nobody. `flush` settles
 * each entry itself.
 */
export class GroupCommit<T> {
  private queue: Pending<T>[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly flush: (batch: Pending<T>[]) => Promise<void>,
    private readonly maxInFlight = 4,
    private readonly maxBatch = 1000,
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
