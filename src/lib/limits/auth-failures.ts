import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { RedisClient } from '../redis/connection.js';
import type { RedisKeys } from '../redis/keys.js';
import { RateLimitError } from '../../domain/errors.js';
import type { Logger } from '../log/logger.js';
import type { Metrics } from '../metrics/metrics.js';

const WINDOW_S = 60;
/** Blocked addresses this process remembers at once; past it the oldest block is forgotten (Redis still has it). */
const MAX_BLOCKED = 10_000;

/**
 * Failed authentications per client address (docs/decisions.md, "Failed
 * authentication is limited per address"). Each failure is counted in Redis,
 * shared by every web and router process, in fixed one-minute windows. An
 * address past the limit is refused with a 429 until its window ends, on
 * every request that presents a key, a valid one included: a block that let
 * valid keys through would still tell a guesser which guess was right.
 *
 * A success costs nothing here: the block is remembered in this process when
 * a failure crosses the limit, so a request is checked against a local map,
 * and only failures reach Redis. Another process learns of the block at the
 * address's next failure there. When Redis cannot be asked, failures are not
 * counted (fail open, counted in troupe_rate_limiter_fail_open_total).
 */
export class AuthFailureLimiter {
  private readonly limiter: RateLimiterRedis | null;
  /** Address → when its block ends (ms since the epoch). */
  private readonly blocked = new Map<string, number>();

  constructor(
    redis: RedisClient,
    keys: RedisKeys,
    private readonly perMinute: number,
    private readonly metrics: Metrics,
    private readonly log: Logger,
  ) {
    this.limiter = perMinute > 0 ? new RateLimiterRedis({ storeClient: redis, keyPrefix: keys.rateLimit('auth-failures'), points: perMinute, duration: WINDOW_S }) : null;
  }

  /** Throws the 429 when `address` is blocked in this process; nothing is awaited. */
  check(address: string): void {
    const until = this.blocked.get(address);
    if (until === undefined) return;
    if (until <= Date.now()) this.blocked.delete(address);
    else throw this.refusal(until);
  }

  /** Counts one failure; resolves to the 429 to answer instead of the 401 once the address is past its limit. */
  async failed(address: string): Promise<RateLimitError | null> {
    if (!this.limiter) return null;
    let res: RateLimiterRes;
    try {
      res = await this.limiter.consume(address, 1);
    } catch (e) {
      if (!(e instanceof RateLimiterRes)) {
        this.metrics.rateLimiterFailOpen.inc({ surface: 'auth_failures' });
        this.log.warn({ err: (e as Error).message }, 'failed-authentication limiter unavailable; failure not counted');
        return null;
      }
      res = e;
    }
    if (res.consumedPoints <= this.perMinute) return null;
    const until = Date.now() + res.msBeforeNext;
    if (this.blocked.size >= MAX_BLOCKED) this.blocked.delete(this.blocked.keys().next().value!);
    this.blocked.set(address, until);
    this.metrics.rateLimitRefusals.inc({ surface: 'auth', scope: 'address' });
    return this.refusal(until);
  }

  private refusal(until: number): RateLimitError {
    const retry = Math.max(1, Math.ceil((until - Date.now()) / 1000));
    return new RateLimitError(`Too many failed authentications from this address (limit ${this.perMinute} per minute); retry in ${retry} s.`, 'too_many_auth_failures', { 'Retry-After': String(retry) });
  }
}
