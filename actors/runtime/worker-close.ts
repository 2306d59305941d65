import type { Worker } from 'bullmq';
import type { RedisClient } from '../../src/lib/redis/connection.js';

/** After the last handler returned, how long the workers' close may still wait for a Redis that does not answer. */
export const UNREACHABLE_GRACE_MS = 1000;

/** Handlers running in this process; resolves `idle()` once none does. */
export class RunningTurns {
  private count = 0;
  private waiters: (() => void)[] = [];

  async run<T>(fn: () => Promise<T>): Promise<T> {
    this.count++;
    try {
      return await fn();
    } finally {
      if (--this.count === 0) this.waiters.splice(0).forEach((wake) => wake());
    }
  }

  idle(): Promise<void> {
    return this.count === 0 ? Promise.resolve() : new Promise((r) => this.waiters.push(r));
  }
}

/**
 * Closes BullMQ workers: each waits for its running jobs, then closes its
 * connections. With Redis unreachable that close never ends: BullMQ waits for
 * its blocking connection's 'end', which ioredis does not emit for a client
 * that is between reconnect attempts, so a stopping worker sat out its whole
 * shutdown timeout. Handlers are still waited for as before (they finish or
 * fail on their own, bounded by their commands' timeouts); once none runs and
 * Redis still does not answer a moment later, nothing is left to hand back and
 * the close is abandoned. Resolves whether the close completed.
 */
export async function closeWorkers(workers: Worker[], turns: RunningTurns, redis: RedisClient, graceMs = UNREACHABLE_GRACE_MS): Promise<boolean> {
  let done = false;
  const closed = Promise.allSettled(workers.map((w) => w.close())).then(() => (done = true));
  const abandoned = (async () => {
    await turns.idle();
    // A completion write just after the last handler returned lands within the grace when Redis is up.
    do await sleep(graceMs);
    while (!done && redis.status === 'ready');
    return false;
  })();
  return Promise.race([closed, abandoned]);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}
