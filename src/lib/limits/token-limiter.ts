import { RateLimiterRedis, type RateLimiterRes } from 'rate-limiter-flexible';
import { RateLimitError } from '../../domain/errors.js';
import type { Logger } from '../log/logger.js';
import type { Metrics } from '../metrics/metrics.js';
import type { RedisClient } from '../redis/connection.js';
import type { RedisKeys } from '../redis/keys.js';
import type { OrgLimitsLookup } from './org-limits.js';
import type { Admitted } from '../routing/admission.js';

/**
 * How long a process decides from its own view of a window before reading Redis again. Its own tokens are in the view
 * at once, and each flush below returns the window's total (every process's tokens); longer than FLUSH_MS, so a
 * window in use here is never read on a call's path, and an idle one is read again before it is trusted.
 */
const FRESH_MS = 1500;
/**
 * Settled tokens are added to Redis together: one Lua call per window per FLUSH_MS rather than one per call, and
 * none on the answer's path (settle runs just before the answer is written). A window whose unflushed tokens reach
 * 1/FLUSH_SHARE of its limit is flushed at once, so what other processes cannot see yet stays small against it.
 */
const FLUSH_MS = 1000;
const FLUSH_SHARE = 100;
const MAX_WINDOWS = 10_000;

/** The routing key as the token check needs it: its id and its own limit (admin CLI), if any. */
export interface TokenKey {
  _id: string;
  tokens_per_min?: number | null;
}

/** One window counter (an org's or a key's) as this process last saw it. */
interface Window {
  scope: 'org' | 'key';
  id: string;
  limit: number;
  limiter: RateLimiterRedis;
  /** This window's count as last seen, plus what this process has spent since. */
  consumed: number;
  /** Tokens spent here and not yet added in Redis. */
  pending: number;
  /** Epoch ms the fixed window ends; 0 when unknown. */
  resetAt: number;
  readAt: number;
  reading: Promise<void> | null;
}

/**
 * Tokens per minute per org and per routing key on the routing interface, counted in Redis by rate-limiter-flexible
 * (fixed one-minute windows, as the request limits). A call's tokens are known only when it settles, so a call is
 * admitted while its windows' counts are under their limits and its input + output tokens are added when it settles.
 * The overshoot is bounded: by the calls already admitted when a window crossed its limit (each at most its prompt
 * plus its maximum output), plus, with several router processes, what the others have not flushed yet (under
 * 1/FLUSH_SHARE of the limit each, plus one call) or settled since this process last saw the window (at most
 * FRESH_MS ago). A Redis failure lets calls through, counted, like the request limits.
 */
export class TokenLimiter {
  private readonly limiters = new Map<string, RateLimiterRedis>();
  private readonly windows = new Map<string, Window>();
  private readonly unflushed = new Set<Window>();
  private flushTimer: NodeJS.Timeout | null = null;
  private flushSoon = false;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly limits: OrgLimitsLookup,
    private readonly metrics: Metrics,
    private readonly log: Logger,
    /** The window's length; one minute, shorter only in tests of a window's end. */
    private readonly windowS = 60,
  ) {}

  /**
   * Checks the org's and the key's windows; resolves to what the call spends on settle (null when no limit applies),
   * or rejects with a 429 naming the limit reached. When both views are fresh, nothing is awaited.
   */
  admit(orgId: string, key: TokenKey): Promise<Admitted | null> {
    const l = this.limits.cached(orgId);
    if (!l) return this.limits.of(orgId).then((x) => this.admitUnder(orgId, key, x.routing_tokens_per_min ?? 0, x.routing_key_tokens_per_min ?? 0));
    return this.admitUnder(orgId, key, l.routing_tokens_per_min ?? 0, l.routing_key_tokens_per_min ?? 0);
  }

  private admitUnder(orgId: string, key: TokenKey, orgLimit: number, keyDefault: number): Promise<Admitted | null> {
    const keyLimit = key.tokens_per_min ?? keyDefault;
    const org = orgLimit > 0 ? this.window('org', orgId, orgLimit) : null;
    const k = keyLimit > 0 ? this.window('key', key._id, keyLimit) : null;
    if (!org && !k) return NONE;
    const now = Date.now();
    const orgStale = org !== null && this.stale(org, now);
    const keyStale = k !== null && this.stale(k, now);
    if (orgStale || keyStale) return Promise.all([orgStale ? this.read(org) : null, keyStale ? this.read(k) : null]).then(() => this.decide(org, k, Date.now()));
    try {
      return Promise.resolve(this.decide(org, k, now));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** A view too old to decide from; a refusing one stays trusted until its window ends. */
  private stale(w: Window, now: number): boolean {
    return now - w.readAt > FRESH_MS && !this.refusing(w, now);
  }

  /** Admitted: the call's tokens are counted when it settles; one that ends without usage spent none. */
  private decide(org: Window | null, key: Window | null, now: number): Admitted {
    if (org && this.refusing(org, now)) throw this.refusal(org, now);
    if (key && this.refusing(key, now)) throw this.refusal(key, now);
    return { settle: (u) => this.spend(org, key, u.tokens), release: NOTHING };
  }

  /** The org's limits changed here (PATCH /v1/organization): this process applies them at once, others within 5 s. */
  forget(orgId: string): void {
    this.limits.forget(orgId);
  }

  private refusing(w: Window, now: number): boolean {
    return w.consumed >= w.limit && now < w.resetAt;
  }

  private refusal(w: Window, now: number): RateLimitError {
    this.metrics.rateLimitRefusals.inc({ surface: 'routing_tokens', scope: w.scope });
    const retry = Math.max(1, Math.ceil((w.resetAt - now) / 1000));
    const who = w.scope === 'org' ? 'this organization' : 'this key';
    const headers = { 'RateLimit-Limit': String(w.limit), 'RateLimit-Remaining': '0', 'RateLimit-Reset': String(retry), 'RateLimit-Policy': `${w.limit};w=${this.windowS}`, 'Retry-After': String(retry) };
    return new RateLimitError(`Token limit of ${w.limit} tokens per minute on the routing interface for ${who} reached; retry in ${retry} s.`, 'rate_limited', headers);
  }

  private window(scope: Window['scope'], id: string, limit: number): Window {
    const wid = `${scope}:${limit}:${id}`;
    let w = this.windows.get(wid);
    if (!w) {
      if (this.windows.size >= MAX_WINDOWS) this.windows.clear();
      w = { scope, id, limit, limiter: this.limiter(scope, limit), consumed: 0, pending: 0, resetAt: 0, readAt: 0, reading: null };
      this.windows.set(wid, w);
    }
    return w;
  }

  private limiter(scope: Window['scope'], points: number): RateLimiterRedis {
    const id = `${scope}:${points}`;
    let l = this.limiters.get(id);
    if (!l) {
      // One counter per org or key whatever its limit: a changed limit keeps the window's count.
      l = new RateLimiterRedis({ storeClient: this.redis, keyPrefix: this.keys.rateLimit(`routing-tokens-${scope}`), points, duration: this.windowS });
      this.limiters.set(id, l);
    }
    return l;
  }

  private read(w: Window): Promise<void> {
    return (w.reading ??= w.limiter.get(w.id).then(
      (res) => {
        this.seen(w, res, Date.now());
        w.reading = null;
      },
      (err: unknown) => {
        // Fail open (docs/decisions.md, "Rate limits fail open, counted"), and ask again after FRESH_MS.
        this.metrics.rateLimiterFailOpen.inc({ surface: 'routing_tokens' });
        this.log.warn({ err: (err as Error).message }, 'token limiter unavailable; call let through');
        w.readAt = Date.now();
        w.reading = null;
      },
    ));
  }

  private seen(w: Window, res: RateLimiterRes | null, now: number): void {
    w.consumed = (res?.consumedPoints ?? 0) + w.pending;
    w.resetAt = res ? now + res.msBeforeNext : 0;
    w.readAt = now;
  }

  /** The settled call's tokens, added to both windows: at once to this process's view, within FLUSH_MS in Redis. */
  private spend(org: Window | null, key: Window | null, tokens: number): void {
    const n = Math.round(tokens);
    if (!(n > 0)) return;
    const now = Date.now();
    for (const w of [org, key]) {
      if (!w) continue;
      // No window known (none in Redis when last read, or it ended): the flush opens one about now.
      if (w.resetAt <= now) {
        w.consumed = w.pending;
        w.resetAt = now + this.windowS * 1000;
      }
      w.consumed += n;
      w.pending += n;
      this.unflushed.add(w);
    }
    const soon = (org !== null && org.pending * FLUSH_SHARE >= org.limit) || (key !== null && key.pending * FLUSH_SHARE >= key.limit);
    if (soon && !this.flushSoon) {
      if (this.flushTimer) clearTimeout(this.flushTimer);
      this.flushSoon = true;
      this.flushTimer = setTimeout(() => this.flush(), 0);
    } else if (!this.flushTimer) this.flushTimer = setTimeout(() => this.flush(), FLUSH_MS);
    // Tokens not yet flushed are not worth holding a stopping process for.
    this.flushTimer?.unref();
  }

  private flush(): void {
    this.flushTimer = null;
    this.flushSoon = false;
    for (const w of this.unflushed) {
      const n = w.pending;
      w.pending = 0;
      w.limiter.penalty(w.id, n).then(
        (res) => this.seen(w, res, Date.now()),
        (err: unknown) => this.log.warn({ err: (err as Error).message }, 'could not count routed tokens'),
      );
    }
    this.unflushed.clear();
  }
}

const NONE: Promise<null> = Promise.resolve(null);
const NOTHING = (): void => {};
