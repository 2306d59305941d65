import { isCluster, type RedisClient } from '../../infra/redis/connection.js';

export type Listener = (message: string) => void;

/**
 * One Redis subscriber connection per process, fanned out in-process. Streams
 * and waiters subscribe to a channel through here; the Redis SUBSCRIBE is
 * issued for the first listener of a channel and dropped after the last, so
 * thousands of SSE streams cost one connection.
 *
 * On a Redis Cluster the channels are shard channels (SSUBSCRIBE, see
 * publish.ts): ioredis keeps one subscriber connection per master and routes
 * each channel to its slot's node, so a message crosses the cluster bus only
 * to the shard that owns it.
 */
export class PubSubHub {
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly pending = new Map<string, Promise<unknown>>();
  private closed = false;

  private readonly sharded: boolean;

  constructor(private readonly sub: RedisClient) {
    this.sharded = isCluster(sub);
    sub.on(this.sharded ? 'smessage' : 'message', (channel: string, message: string) => {
      const set = this.listeners.get(channel);
      if (!set) return;
      for (const l of set) {
        try {
          l(message);
        } catch {
          // One faulty listener must not starve the others.
        }
      }
    });
  }

  /** Resolves once Redis confirms the subscription, so nothing published after it is missed. */
  async subscribe(channel: string, listener: Listener): Promise<() => void> {
    let set = this.listeners.get(channel);
    if (!set) {
      set = new Set();
      this.listeners.set(channel, set);
      this.pending.set(channel, this.sharded ? this.sub.ssubscribe(channel) : this.sub.subscribe(channel));
    }
    set.add(listener);
    await this.pending.get(channel);
    return () => this.unsubscribe(channel, listener);
  }

  private unsubscribe(channel: string, listener: Listener): void {
    const set = this.listeners.get(channel);
    if (!set || !set.delete(listener) || set.size > 0) return;
    this.listeners.delete(channel);
    this.pending.delete(channel);
    if (this.closed) return;
    void (this.sharded ? this.sub.sunsubscribe(channel) : this.sub.unsubscribe(channel)).catch(() => undefined);
  }

  /**
   * Calls `fn` whenever the subscriber connection drops. Messages published
   * until it is back (ioredis resubscribes on its own) are lost for good, so
   * whoever waits for one should stop waiting.
   */
  onDisconnect(fn: () => void): void {
    this.sub.on('close', fn);
  }

  get channelCount(): number {
    return this.listeners.size;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
  }
}
