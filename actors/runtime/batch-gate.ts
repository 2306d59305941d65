/**
 * Bounds how many batch-priority messages a process handles at once, across
 * the queues that share it. Queue priority alone cannot keep a batch drain
 * from filling the process: a worker takes a batch message whenever it has a
 * free slot and nothing better is waiting, so during a 10,000-item drain the
 * 64 session shards and the batch actor ran ~80 batch turns at once and an
 * interactive turn's every await queued behind theirs on the event loop.
 * Interactive messages never wait here. Waiters are served in arrival order,
 * except that `admit` lets one go at once (priority inheritance: a batch turn
 * waiting here holds its shard, and an interactive message may wait behind it).
 */
export class BatchGate {
  private running = 0;
  private readonly waiting: { queue: string; go: () => void }[] = [];

  /** `slots` of 0 (or less) means no bound. */
  constructor(readonly slots: number) {}

  /** Runs `fn` once a slot is free (or `admit(queue)` is called); the slot is held until `fn` settles. */
  async run<T>(queue: string, fn: () => Promise<T>): Promise<T> {
    if (this.slots <= 0) return fn();
    // A waiter is counted in by whoever wakes it, so no newcomer takes its slot meanwhile.
    if (this.running < this.slots) this.running++;
    else await new Promise<void>((go) => this.waiting.push({ queue, go }));
    try {
      return await fn();
    } finally {
      this.release();
    }
  }

  private release(): void {
    // Above the bound (after an `admit`) the slot is given back; at or below it, it passes to the next waiter.
    const next = this.running > this.slots ? undefined : this.waiting.shift();
    if (next) next.go();
    else this.running--;
  }

  /** The queues whose messages wait for a slot. */
  waitingQueues(): Set<string> {
    return new Set(this.waiting.map((w) => w.queue));
  }

  /** Lets the first waiter of `queue` run now, beyond the bound; false if none waits. */
  admit(queue: string): boolean {
    const i = this.waiting.findIndex((w) => w.queue === queue);
    if (i < 0) return false;
    this.running++;
    this.waiting.splice(i, 1)[0].go();
    return true;
  }

  /** Batch messages running and waiting, for tests and metrics. */
  get load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }
}
