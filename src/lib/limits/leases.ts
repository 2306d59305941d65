import { RateLimiterRes } from 'rate-limiter-flexible';

/** What a rate check reports: the same fields as the library's answer. */
export type Count = Pick<RateLimiterRes, 'remainingPoints' | 'msBeforeNext' | 'consumedPoints'>;

/** Takes `points` from the shared counter; rejects with a RateLimiterRes when that passes the limit. */
export type Consume = (points: number) => Promise<RateLimiterRes>;

/** Lease size for a per-minute limit: 1 (an exact count) below 2,000, at most 100, so at most 0.2% of a limit is held. */
export function leaseSize(limit: number): number {
  return Math.max(1, Math.min(100, Math.floor(limit / 1000)));
}

interface Held {
  size: number;
  tokens: number;
  /** The shared counter's remaining points after this process's last lease. */
  remaining: number;
  resetAt: number;
  /** A lease on its way, shared by every request that finds no token. */
  pending: Promise<void> | null;
}

const MAX_ENTRIES = 10_000;

/** The count as the client sees it: what the shared counter has left plus this process's unspent tokens. */
function view(h: Held, limit: number, now: number): Count {
  const left = h.remaining + h.tokens;
  return { remainingPoints: left, msBeforeNext: Math.max(0, h.resetAt - now), consumedPoints: limit - left };
}

/**
 * Request tokens leased from a shared counter in blocks, so a process pays
 * the counter's Redis round trip once per block instead of on every request,
 * and takes the next block while a quarter of the last one is left. Leased
 * tokens are counted in Redis at once, so the processes together never admit
 * more than the limit; the cost is that a block held by one process is not
 * available to another until the window ends (at most 0.2% of the limit per
 * process), and a block asked for near the end of a window may be refused
 * whole. Small limits (a block of one) are counted exactly, straight on the counter.
 */
export class TokenLeases {
  private readonly held = new Map<string, Held>();

  /** One request's token for `id` under `limit`; throws the library's RateLimiterRes on a refusal. */
  async take(id: string, limit: number, consume: Consume): Promise<Count> {
    // A block of one is an exact count: the counter's own answer, with nothing held here.
    if (leaseSize(limit) === 1) return consume(1);
    const now = this.takeNow(id, limit, consume);
    if (now) return now;
    let h = this.held.get(id);
    if (!h) {
      if (this.held.size >= MAX_ENTRIES) this.prune(Date.now());
      h = { size: leaseSize(limit), tokens: 0, remaining: limit, resetAt: 0, pending: null };
      this.held.set(id, h);
    }
    // Requests that find the block empty wait for the lease already asked for (a few times at most)
    // rather than each asking for a block of its own.
    for (let round = 0; h.pending && round < 3 && this.available(h) === 0; round++) await h.pending;
    if (this.available(h) > 0) return this.spend(h, limit, consume);
    // No token here: lease a block and use its first token (a refusal is thrown to the caller).
    await this.lease(h, consume, 1);
    return view(h, limit, Date.now());
  }

  /**
   * A token from the block this process holds for `id`, without waiting; null when there is none at hand (no block
   * yet, or it is spent) and the caller must go through `take`. Most requests are served here, with no promise.
   */
  takeNow(id: string, limit: number, consume: Consume): Count | null {
    const h = this.held.get(id);
    if (!h || leaseSize(limit) === 1 || this.available(h) === 0) return null;
    return this.spend(h, limit, consume);
  }

  /** Spends one held token; the next block is asked for while a quarter of this one is left. */
  private spend(h: Held, limit: number, consume: Consume): Count {
    h.tokens--;
    if (h.tokens <= h.size / 4 && !h.pending) this.lease(h, consume).catch(() => undefined);
    return view(h, limit, Date.now());
  }

  /** Unspent tokens of the current window; a block lapses with the window it was leased in. */
  private available(h: Held): number {
    if (h.resetAt <= Date.now()) h.tokens = 0;
    return h.tokens;
  }

  /** Asks the shared counter for a block; `use` tokens of it are spent at once by the caller. */
  private lease(h: Held, consume: Consume, use = 0): Promise<void> {
    // Near the limit, smaller blocks: what one process holds is what others are refused.
    const points = Math.max(1, Math.min(h.size, Math.floor(h.remaining / 4)));
    const asked = consume(points).then(
      (res) => {
        const resetAt = Date.now() + res.msBeforeNext;
        if (Math.abs(resetAt - h.resetAt) > 1000) h.tokens = 0; // a new window: the old block is gone
        h.tokens += points - use;
        h.remaining = res.remainingPoints;
        h.resetAt = resetAt;
      },
      (err: unknown) => {
        if (err instanceof RateLimiterRes) {
          // Refused: nothing is left in this window, so the next ask (the next window's first) is one token.
          h.tokens = 0;
          h.remaining = 0;
          h.resetAt = Date.now() + err.msBeforeNext;
        }
        throw err;
      },
    );
    const pending = asked.catch(() => undefined);
    h.pending = pending;
    void pending.then(() => {
      if (h.pending === pending) h.pending = null;
    });
    return asked;
  }

  private prune(now: number): void {
    for (const [id, h] of this.held) if (h.resetAt <= now && !h.pending) this.held.delete(id);
  }
}
