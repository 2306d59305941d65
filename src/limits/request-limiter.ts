import type { RedisClient } from '../../infra/redis/connection.js';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { RedisKeys } from '../../infra/redis/keys.js';
import { RateLimitError } from '../domain/errors.js';
import type { Logger } from '../log/logger.js';
import type { Metrics } from '../metrics/metrics.js';
import { TokenLeases, type Count } from './leases.js';
import type { OrgLimitsLookup } from './org-limits.js';

export type LimitedSurface = 'api' | 'routing';

const WINDOW_S = 60;
const SURFACE_NAME: Record<LimitedSurface, string> = { api: 'the base API', routing: 'the routing interface' };

interface Check {
  scope: 'org' | 'key';
  limit: number;
  res: Count;
}

/** IETF RateLimit header fields of the tightest check: what a client needs to pace itself. */
function headersOf(c: Check): Record<string, string> {
  return {
    'RateLimit-Limit': String(c.limit),
    'RateLimit-Remaining': String(c.res.remainingPoints),
    'RateLimit-Reset': String(Math.max(1, Math.ceil(c.res.msBeforeNext / 1000))),
    'RateLimit-Policy': `${c.limit};w=${WINDOW_S}`,
  };
}

/**
 * Per-org and per-key request rates, counted in Redis by rate-limiter-flexible
 * (fixed one-minute windows, one atomic Lua call per counter), so every web
 * or router process shares one count. Limits of 2,000/min and more are taken
 * in leased blocks (TokenLeases); smaller ones are counted one by one. A Redis failure lets the request
 * through: the limit protects the service, it must not become an outage.
 */
export class RequestLimiter {
  /** One limiter object per (counter, limit): the library fixes `points` at construction. */
  private readonly limiters = new Map<string, RateLimiterRedis>();
  /** Tokens taken from those counters in blocks, so most requests need no Redis round trip (see leases.ts). */
  private readonly leases = new TokenLeases();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly limits: OrgLimitsLookup,
    private readonly metrics: Metrics,
    private readonly log: Logger,
  ) {}

  private limiter(counter: string, points: number): RateLimiterRedis {
    const id = `${counter}:${points}`;
    let l = this.limiters.get(id);
    if (!l) {
      l = new RateLimiterRedis({ storeClient: this.redis, keyPrefix: this.keys.rateLimit(counter), points, duration: WINDOW_S });
      this.limiters.set(id, l);
    }
    return l;
  }

  private async consume(counter: string, scope: Check['scope'], id: string, limit: number): Promise<Check | null> {
    if (limit <= 0) return null;
    const limiter = this.limiter(counter, limit);
    try {
      return { scope, limit, res: await this.leases.take(`${counter}:${limit}:${id}`, limit, (points) => limiter.consume(id, points)) };
    } catch (e) {
      if (e instanceof RateLimiterRes) return { scope, limit, res: e };
      this.log.warn({ err: (e as Error).message }, 'rate limiter unavailable; request let through');
      return null;
    }
  }

  /**
   * Counts one request against the org and the key; returns the headers to
   * send, or throws a 429 naming the limit that was reached.
   */
  async admit(surface: LimitedSurface, orgId: string, keyId: string): Promise<Record<string, string>> {
    const l = await this.limits.of(orgId);
    const [org, key] = await Promise.all([
      this.consume(`${surface}-org`, 'org', orgId, surface === 'api' ? l.api_per_min : l.routing_per_min),
      this.consume(`${surface}-key`, 'key', keyId, surface === 'api' ? l.api_key_per_min : l.routing_key_per_min),
    ]);
    const checks = [org, key].filter((c): c is Check => c !== null);
    if (!checks.length) return {};
    const refused = checks.find((c) => c.res.consumedPoints > c.limit);
    if (refused) {
      this.metrics.rateLimitRefusals.inc({ surface, scope: refused.scope });
      const retry = Math.max(1, Math.ceil(refused.res.msBeforeNext / 1000));
      const who = refused.scope === 'org' ? 'this organization' : 'this key';
      const headers = { ...headersOf(refused), 'RateLimit-Remaining': '0', 'Retry-After': String(retry) };
      throw new RateLimitError(`Rate limit of ${refused.limit} requests per minute on ${SURFACE_NAME[surface]} for ${who} reached; retry in ${retry} s.`, 'rate_limited', headers);
    }
    return headersOf(checks.reduce((a, b) => (b.res.remainingPoints < a.res.remainingPoints ? b : a)));
  }
}
