/**
 * Bounds how many batch-priority messages a process handles at once, across
 * the queues that share it. Queue priority alone cannot keep a batch drain
 * from filling the process: a worker takes a batch message whenever it has a
 * free slot and nothing better is waiting, so during a 10,000-item drain the
 * 64 session shards and the batch actor ran ~80 batch turns at once and an
 * interactive turn's every await queued behind theirs on the event loop.
 * Interactive messages never wait here. Waiters are served in arrival order.
 */
export class BatchGate {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  /** `slots` of 0 (or less) means no bound. */
  constructor(readonly slots: number) {}

  /** Runs `fn` once a slot is free; the slot is held until `fn` settles. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.slots <= 0) return fn();
    if (this.running >= this.slots) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await fn();
    } finally {
      // The slot passes straight to the next waiter, so `running` stays at the bound while any wait.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }

  /** Batch messages running and waiting, for tests and metrics. */
  get load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }
}
