import type { Redis } from 'ioredis';
import { isCluster, type RedisClient } from '../redis/connection.js';
import { shardSubscribers } from '../redis/shard-subscribers.js';

export type Listener = (message: string) => void;

export interface HubOptions {
  /** How often the subscriber connection is asked to answer a PING. */
  probeEveryMs?: number;
  /** How long a PING may go unanswered before the connection is taken for dead and replaced. */
  probeTimeoutMs?: number;
  /** Told when a silent connection is replaced (for a log line). */
  onSilent?: (silentMs: number) => void;
}

/** A PING every 2 s, dead after 5 s: a partition is noticed within 7 s, as the command connections notice it (5 s). */
export const PROBE_EVERY_MS = 2000;
export const PROBE_TIMEOUT_MS = 5000;

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
 *
 * A subscriber only reads, so a silent connection looks like a quiet one: a
 * partition, or a Redis that dropped this client while the close was lost in
 * one, would leave it waiting for messages that never come, for good. The hub
 * PINGs it and replaces a connection that does not answer; after any
 * reconnect it tells `onResubscribed` listeners once Redis has confirmed the
 * subscriptions again, so that whoever follows a channel reads what it missed
 * from where it is stored (pub/sub is a hint; messages published meanwhile
 * are gone).
 *
 * On a Redis Cluster the same holds per shard subscriber connection. ioredis
 * replaces one whose connection ends (it says `-node`, then
 * `subscribersReady` once it has re-sent the SSUBSCRIBEs), but never finds
 * out that one went silent: the hub PINGs each (src/lib/redis/shard-subscribers.ts)
 * and ends a silent one, which ioredis then replaces the same way.
 */
export class PubSubHub {
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly pending = new Map<string, Promise<unknown>>();
  private readonly resubscribed = new Set<() => void>();
  private closed = false;
  /** The connection closed since it was last ready: the next `ready` is a resubscription. */
  private interrupted = false;
  private probing = false;
  private readonly probeTimer: NodeJS.Timeout;

  private readonly sharded: boolean;

  constructor(
    private readonly sub: RedisClient,
    private readonly opts: HubOptions = {},
  ) {
    this.sharded = isCluster(sub);
    sub.on('close', () => (this.interrupted = true));
    // A shard subscriber that ended (or a node gone from the cluster: an extra catch-up then, which is harmless).
    if (this.sharded) sub.on('-node', () => (this.interrupted = true));
    // A single connection re-issues the SUBSCRIBEs right after `ready`; a cluster has sent the SSUBSCRIBEs of every
    // replaced shard subscriber when it says `subscribersReady`. Either way they are confirmed first.
    sub.on(this.sharded ? 'subscribersReady' : 'ready', () => {
      if (!this.interrupted) return;
      this.interrupted = false;
      setImmediate(() => void this.confirmResubscribed());
    });
    this.probeTimer = setInterval(() => void this.probe(), opts.probeEveryMs ?? PROBE_EVERY_MS);
    this.probeTimer.unref();
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
    const { confirmed, stop } = this.listen(channel, listener);
    await confirmed;
    return stop;
  }

  /**
   * Listens at once; `confirmed` resolves when Redis confirms the
   * subscription. For a caller that must not wait on it: while the subscriber
   * is cut off from Redis the confirmation comes only after the cut heals.
   */
  listen(channel: string, listener: Listener): { confirmed: Promise<void>; stop: () => void } {
    let set = this.listeners.get(channel);
    if (!set) {
      set = new Set();
      this.listeners.set(channel, set);
      this.pending.set(channel, this.sharded ? this.sub.ssubscribe(channel) : this.sub.subscribe(channel));
    }
    set.add(listener);
    const confirmed = (this.pending.get(channel) as Promise<unknown>).then(() => undefined);
    return { confirmed, stop: () => this.unsubscribe(channel, listener) };
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
    if (this.sharded) this.sub.on('-node', fn);
  }

  /**
   * Calls `fn` after each reconnect of the subscriber, once its subscriptions
   * are confirmed again: anything published from then on arrives, anything
   * before it may have been missed. Returns a function that stops the calls.
   */
  onResubscribed(fn: () => void): () => void {
    this.resubscribed.add(fn);
    return () => void this.resubscribed.delete(fn);
  }

  /**
   * The connections messages arrive on: the one subscriber, or a cluster's
   * shard subscribers that are started (ioredis starts one for a master only
   * once a channel of its slots is subscribed).
   */
  private connections(): Redis[] {
    if (!isCluster(this.sub)) return [this.sub];
    return shardSubscribers(this.sub)
      .map((s) => s.connection)
      .filter((c) => c.status !== 'wait');
  }

  /** A PING queued behind the re-issued SUBSCRIBEs answers after them (Redis replies in order). */
  private async confirmResubscribed(): Promise<void> {
    try {
      await Promise.all(this.connections().map((c) => c.ping()));
    } catch {
      // Dropped again: its next `ready` / `subscribersReady` comes back here.
      this.interrupted = true;
      return;
    }
    for (const fn of this.resubscribed) {
      try {
        fn();
      } catch {
        // One faulty listener must not starve the others.
      }
    }
  }

  private async probe(): Promise<void> {
    if (this.probing || this.closed || this.sub.status !== 'ready') return;
    this.probing = true;
    try {
      await Promise.all(this.connections().map((c) => this.probeOne(c)));
    } finally {
      this.probing = false;
    }
  }

  private async probeOne(conn: Redis): Promise<void> {
    if (conn.status !== 'ready') return;
    const timeoutMs = this.opts.probeTimeoutMs ?? PROBE_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    // A refused PING means the connection is already closing, which ioredis handles; only silence is ours.
    const answered = await Promise.race([
      conn.ping().then(() => true, () => true),
      // Decided after the poll phase: a process stalled past the timeout reads the PONG waiting for it first.
      new Promise<boolean>((r) => (timer = setTimeout(() => setImmediate(() => r(false)), timeoutMs).unref())),
    ]);
    clearTimeout(timer);
    if (answered || this.closed || conn.status !== 'ready') return;
    this.opts.onSilent?.(timeoutMs);
    // One connection reconnects itself; a shard subscriber is not to (ioredis gives it no retry strategy): once it
    // has ended, ioredis starts a new one for its master and subscribes it again.
    conn.disconnect(!this.sharded);
  }

  /**
   * Resolves when the subscriber connections answer now: readiness, since a
   * web node whose subscriber is down serves streams nothing live. A silent
   * one never answers, so the caller bounds the wait.
   */
  async check(): Promise<void> {
    if (this.sub.status !== 'ready') throw new Error(`subscriber connection is ${this.sub.status}`);
    for (const c of this.connections()) if (c.status !== 'ready') throw new Error(`a shard subscriber connection is ${c.status}`);
    await Promise.all(this.connections().map((c) => c.ping()));
  }

  get channelCount(): number {
    return this.listeners.size;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.probeTimer);
    this.resubscribed.clear();
    this.listeners.clear();
  }
}
