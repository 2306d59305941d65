import type { RedisClient } from '../redis/connection.js';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { RedisKeys } from '../redis/keys.js';
import { RateLimitError } from '../../domain/errors.js';
import type { Logger } from '../log/logger.js';
import type { Metrics } from '../metrics/metrics.js';
import { TokenLeases, type Consume, type Count } from './leases.js';
import type { OrgLimits } from '../../domain/org-limits.js';
import type { OrgLimitsLookup } from './org-limits.js';

export type LimitedSurface = 'api' | 'routing';
/** What let a request through when Redis could not be asked: a surface's requests, or routed agent turns. */
type FailOpenSurface = LimitedSurface | 'routed_turns';

const WINDOW_S = 60;
const SURFACE_NAME: Record<LimitedSurface, string> = { api: 'the base API', routing: 'the routing interface' };
const COUNTERS: Record<LimitedSurface, { org: string; key: string }> = { api: { org: 'api-org', key: 'api-key' }, routing: { org: 'routing-org', key: 'routing-key' } };
/** Orgs or keys remembered per counter and limit before the map is cleared (entries are cheap to remake). */
const MAX_COUNTED = 10_000;

/** One counter for one org or key: the lease id and the consume call TokenLeases takes, made once. */
interface Counted {
  lease: string;
  consume: Consume;
}

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
  /** By counter, limit, then org or key id: what `counted` made for it. */
  private readonly counters = new Map<string, Map<number, Map<string, Counted>>>();

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

  /** The lease id and consume call of one counter, limit and org or key, made once rather than per request. */
  private counted(counter: string, limit: number, id: string): Counted {
    let byLimit = this.counters.get(counter);
    if (!byLimit) this.counters.set(counter, (byLimit = new Map()));
    let byId = byLimit.get(limit);
    if (!byId) byLimit.set(limit, (byId = new Map()));
    let c = byId.get(id);
    if (!c) {
      if (byId.size >= MAX_COUNTED) byId.clear();
      const limiter = this.limiter(counter, limit);
      c = { lease: `${counter}:${limit}:${id}`, consume: (points) => limiter.consume(id, points) };
      byId.set(id, c);
    }
    return c;
  }

  /** A check answered from a token this process holds: null when the limit is off, undefined when Redis must be asked. */
  private consumeNow(counter: string, scope: Check['scope'], id: string, limit: number): Check | null | undefined {
    if (limit <= 0) return null;
    const c = this.counted(counter, limit, id);
    const res = this.leases.takeNow(c.lease, limit, c.consume);
    return res ? { scope, limit, res } : undefined;
  }

  private async consume(counter: string, scope: Check['scope'], id: string, limit: number, caller: FailOpenSurface): Promise<Check | null> {
    if (limit <= 0) return null;
    const c = this.counted(counter, limit, id);
    try {
      return { scope, limit, res: await this.leases.take(c.lease, limit, c.consume) };
    } catch (e) {
      if (e instanceof RateLimiterRes) return { scope, limit, res: e };
      // Fail open (docs/decisions.md, "Rate limits fail open, counted"): the limit protects the service and must
      // not become an outage of its own; the counter says for how long it was not enforced.
      this.metrics.rateLimiterFailOpen.inc({ surface: caller });
      this.log.warn({ err: (e as Error).message }, 'rate limiter unavailable; request let through');
      return null;
    }
  }

  /**
   * Counts one request against the org and the key; resolves to the headers to
   * send, or rejects with a 429 naming the limit that was reached. When the org's
   * limits and both tokens are at hand (most requests) nothing is awaited.
   */
  admit(surface: LimitedSurface, orgId: string, keyId: string): Promise<Record<string, string>> {
    const l = this.limits.cached(orgId);
    if (!l) return this.limits.of(orgId).then((limits) => this.admitUnder(surface, limits, orgId, keyId));
    return this.admitUnder(surface, l, orgId, keyId);
  }

  private admitUnder(surface: LimitedSurface, l: OrgLimits, orgId: string, keyId: string): Promise<Record<string, string>> {
    const names = COUNTERS[surface];
    const orgLimit = surface === 'api' ? l.api_per_min : l.routing_per_min;
    const keyLimit = surface === 'api' ? l.api_key_per_min : l.routing_key_per_min;
    const org = this.consumeNow(names.org, 'org', orgId, orgLimit);
    const key = this.consumeNow(names.key, 'key', keyId, keyLimit);
    if (org === undefined || key === undefined) {
      const counted = [org === undefined ? this.consume(names.org, 'org', orgId, orgLimit, surface) : org, key === undefined ? this.consume(names.key, 'key', keyId, keyLimit, surface) : key];
      return Promise.all(counted).then(([o, k]) => this.answer(surface, o, k));
    }
    try {
      return Promise.resolve(this.answer(surface, org, key));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Counts an agent turn routed in-process (provider `routing`) against the org's routing rate, the counter a
   * call to the routing interface takes from, so a routed turn costs what the same call over HTTP would. There
   * is no routing key, so no per-key limit. Rejects with the same 429, whose Retry-After the turn waits out.
   */
  async admitRoutedTurn(orgId: string): Promise<null> {
    const l = this.limits.cached(orgId) ?? (await this.limits.of(orgId));
    const names = COUNTERS.routing;
    const org = this.consumeNow(names.org, 'org', orgId, l.routing_per_min);
    this.answer('routing', org === undefined ? await this.consume(names.org, 'org', orgId, l.routing_per_min, 'routed_turns') : org, null);
    // A request counted holds nothing to settle or give back (an Admission of the routed call).
    return null;
  }

  /** The headers of the tightest check, or the 429 of the first limit passed. */
  private answer(surface: LimitedSurface, org: Check | null, key: Check | null): Record<string, string> {
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
