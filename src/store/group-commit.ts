/**
 * Writes that many callers make at once share round trips: each caller's
 * items join the next flush, and a flush starts as soon as the previous one
 * finished (or, when idle, on the next turn of the event loop). Under load a
 * flush carries the writes of every turn that ran meanwhile; alone, a write
 * waits for nobody. `flush` settles each entry itself.
 */
export interface Pending<T> {
  item: T;
  resolve(): void;
  reject(err: Error): void;
}

export class GroupCommit<T> {
  private queue: Pending<T>[] = [];
  private running: Promise<void> | null = null;

  constructor(
    private readonly flush: (batch: Pending<T>[]) => Promise<void>,
    private readonly maxBatch = 1000,
  ) {}

  submit(item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.running ??= this.drain();
    });
  }

  /** Puts entries back at the head of the queue, for the next flush (ordered writes cut short). */
  retry(entries: Pending<T>[]): void {
    this.queue.unshift(...entries);
  }

  private async drain(): Promise<void> {
    // Let the turns already under way in this tick join the first flush.
    await new Promise<void>((r) => setImmediate(r));
    while (this.queue.length) {
      const batch = this.queue.splice(0, this.maxBatch);
      try {
        await this.flush(batch);
      } catch (err) {
        for (const p of batch) p.reject(err as Error);
      }
    }
    this.running = null;
  }
}
