import { Queue, Worker, type Processor, type WorkerOptions } from 'bullmq';
import type { RedisClient } from '../redis/connection.js';
import type { RedisKeys } from '../redis/keys.js';

/**
 * BullMQ queues and workers, with Troupe's hash-tagged key prefix so that a
 * queue's keys stay in one Redis Cluster slot. Producers share the process's
 * command connection; each worker gets a blocking connection of its own
 * (`maxRetriesPerRequest: null`, as BullMQ requires). Built once per process,
 * by the composition root.
 */
export class QueueFactory {
  private readonly queues = new Map<string, Queue>();

  constructor(
    private readonly keys: RedisKeys,
    /** The command connection every queue produces on. */
    readonly producer: RedisClient,
    private readonly blockingConnection: (name: string) => RedisClient,
    private readonly onError: (err: Error, queue: string) => void = () => undefined,
  ) {}

  queue(name: string): Queue {
    let q = this.queues.get(name);
    if (!q) {
      q = new Queue(name, { connection: this.producer, prefix: this.keys.queuePrefix(name) });
      // Without a listener BullMQ prints every reconnect failure during a Redis outage.
      q.on('error', (err) => this.onError(err, name));
      this.queues.set(name, q);
      // BullMQ keeps a queue's first connection check (INFO) for good: a queue first used while Redis did not
      // answer failed every add at once from then on, long after Redis was back. Such a queue is dropped, and
      // the next use builds it again.
      const built = q;
      built.waitUntilReady().catch(() => {
        if (this.queues.get(name) !== built) return;
        this.queues.delete(name);
        void built.close().catch(() => undefined);
      });
    }
    return q;
  }

  worker<T, R>(name: string, processor: Processor<T, R>, opts: Omit<WorkerOptions, 'connection' | 'prefix'> = {}): Worker<T, R> {
    return new Worker<T, R>(name, processor, {
      ...opts,
      connection: this.blockingConnection(`worker:${name}`),
      prefix: this.keys.queuePrefix(name),
    });
  }

  /** Closes every queue this factory opened; safe to call more than once. */
  async close(): Promise<void> {
    const all = [...this.queues.values()];
    this.queues.clear();
    await Promise.allSettled(all.map((q) => q.close()));
  }
}

/** Session id → shard, stable across processes (FNV-1a, 32 bit). */
export function shardOf(sessionId: string, shards: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < sessionId.length; i++) {
    h ^= sessionId.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % shards;
}
