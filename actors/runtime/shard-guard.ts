import type { Queue } from 'bullmq';
import type { RedisClient } from '../../src/lib/redis/connection.js';

/** How often the setting is written again even without a reconnect (a restart can be faster than our ping). */
const REASSERT_EVERY_MS = 15_000;

/**
 * Keeps every shard queue of keyed actors at BullMQ global concurrency 1,
 * which is what makes a key's messages run one at a time cluster-wide. The
 * setting lives in Redis: a Redis restarted without persistence forgets it,
 * so it is written at start, again whenever the connection comes back, and
 * periodically. (The ledger's sequence fence still refuses a second writer
 * in the moments before that.)
 */
export class ShardGuard {
  private readonly queues: Queue[] = [];
  private timer: NodeJS.Timeout | null = null;
  private readonly onReady = () => void this.assert();

  constructor(
    private readonly connection: RedisClient,
    private readonly log: { warn(obj: object, msg: string): void },
  ) {}

  async keep(queues: Queue[]): Promise<void> {
    this.queues.push(...queues);
    await Promise.all(queues.map((q) => q.setGlobalConcurrency(1)));
    if (this.timer) return;
    this.connection.on('ready', this.onReady);
    this.timer = setInterval(this.onReady, REASSERT_EVERY_MS);
    this.timer.unref();
  }

  async assert(): Promise<void> {
    try {
      await Promise.all(this.queues.map((q) => q.setGlobalConcurrency(1)));
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'could not re-assert shard concurrency; retrying later');
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.connection.off('ready', this.onReady);
  }
}
