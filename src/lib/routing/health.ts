import { admission, afterFailure, CLOSED, type BreakerPolicy, type BreakerView } from '../../domain/breaker.js';
import type { CandidateDoc, RouterDoc } from '../../domain/views/router.js';
import type { Metrics } from '../metrics/metrics.js';
import { LabelSets } from '../metrics/label-sets.js';
import type { RedisClient } from '../redis/connection.js';
import type { RedisKeys } from '../redis/keys.js';

/** What an attempt's duration measures: the whole answer (buffered) or the time to the first content (streams). */
export type Timing = 'whole' | 'first_token';

/** The candidates a call tries, in order, and what health changed about the selection (null when nothing did). */
export interface HealthPlan {
  order: CandidateDoc[];
  note: string | null;
  /** The same as codes (Selection.codes); empty when nothing changed. */
  codes: readonly string[];
}

const NO_CODES: readonly string[] = Object.freeze([]);

// The scripts make src/domain/breaker.ts's transitions atomically on the shared hash (f: failures, o: opened at, p: probe until).
const FAIL = `
local f = redis.call('HINCRBY', KEYS[1], 'f', 1)
local o = tonumber(redis.call('HGET', KEYS[1], 'o') or '0')
local p = tonumber(redis.call('HGET', KEYS[1], 'p') or '0')
if p > 0 or (o == 0 and f >= tonumber(ARGV[1])) then
  o = tonumber(ARGV[2]); p = 0
  redis.call('HSET', KEYS[1], 'o', o, 'p', 0)
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {f, o, p}`;

const SUCCEED = `
local o = redis.call('HGET', KEYS[1], 'o')
redis.call('DEL', KEYS[1])
return tonumber(o or '0')`;

// 1: this caller holds the half-open probe; 0: the breaker closed meanwhile; -1: skip (still cooling, or a probe is out).
const PROBE = `
local f = tonumber(redis.call('HGET', KEYS[1], 'f') or '0')
local o = tonumber(redis.call('HGET', KEYS[1], 'o') or '0')
local p = tonumber(redis.call('HGET', KEYS[1], 'p') or '0')
local now = tonumber(ARGV[1])
if o == 0 then return {0, f, o, p} end
if now < o + tonumber(ARGV[2]) or p > now then return {-1, f, o, p} end
p = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'p', p)
return {1, f, o, p}`;

interface Entry {
  /** Its breaker's Redis key, built once. */
  key: string;
  view: BreakerView;
  fetchedAt: number;
  refreshing: boolean;
  /** EWMA of attempt durations in ms, by timing; 0 until measured. */
  whole: number;
  first_token: number;
}

export interface HealthOptions {
  /** How long a process trusts its copy of a breaker before re-reading it in the background. */
  refreshMs?: number;
  metrics?: Metrics;
  now?: () => number;
}

const EWMA_WEIGHT = 0.2;
const MAX_ENTRIES = 50_000;
const TRANSITIONS = new LabelSets<{ model: string; to: string }>(['model', 'to']);

/**
 * Every candidate's circuit breaker and recent latency, as one router process sees them. The breakers live in Redis
 * so every process agrees; each process keeps a copy it trusts for `refreshMs` and then re-reads in the background,
 * so a call to closed candidates (the common case) costs no Redis round trip. Only a candidate never seen before, an
 * open one whose cool-down is over (the probe is claimed atomically) and a failure wait for Redis. Latency is this
 * process's own measure: it only orders candidates the router's policy leaves equal.
 */
export class CandidateHealth {
  /** org → router → model: the hot path looks a candidate up without building its key. */
  private readonly entries = new Map<string, Map<string, Map<string, Entry>>>();
  private size = 0;
  private readonly refreshMs: number;
  private readonly now: () => number;

  constructor(private readonly redis: RedisClient, private readonly keys: RedisKeys, readonly policy: BreakerPolicy, private readonly opts: HealthOptions = {}) {
    this.refreshMs = opts.refreshMs ?? 1000;
    this.now = opts.now ?? Date.now;
  }

  private get ttlMs(): number {
    return this.policy.coolDownMs * 4 + 60_000;
  }

  /**
   * The order to try `eligible` in: candidates whose breaker is open are left out, a cooled-down one is tried if this
   * process wins its probe, and when every candidate is open the least recently opened is tried anyway (a call is
   * never refused untried). `stickyFirst` keeps a conversation's model first; latency orders the price ties of a
   * `cheapest` router.
   */
  plan(orgId: string, router: RouterDoc, eligible: CandidateDoc[], timing: Timing, stickyFirst: boolean): HealthPlan | Promise<HealthPlan> {
    if (this.policy.failures <= 0) return this.byLatency(orgId, router, eligible, timing, stickyFirst);
    const now = this.now();
    let slow = false;
    const models = this.entries.get(orgId)?.get(router.router_id);
    for (const c of eligible) {
      const e = models?.get(c.model);
      if (!e) {
        slow = true;
        continue;
      }
      if (now - e.fetchedAt > this.refreshMs) this.refresh(e);
      if (admission(e.view, now, this.policy) !== 'try') slow = true;
    }
    if (!slow) return this.byLatency(orgId, router, eligible, timing, stickyFirst);
    return this.planSlow(orgId, router, eligible, timing, stickyFirst, now);
  }

  private async planSlow(orgId: string, router: RouterDoc, eligible: CandidateDoc[], timing: Timing, stickyFirst: boolean, now: number): Promise<HealthPlan> {
    const rid = router.router_id;
    const kept: CandidateDoc[] = [];
    const skipped: { c: CandidateDoc; openedAt: number }[] = [];
    let probed: string | null = null;
    for (const c of eligible) {
      const e = this.get(orgId, rid, c.model) ?? (await this.load(orgId, rid, c.model));
      const a = admission(e.view, now, this.policy);
      if (a === 'try') kept.push(c);
      else if (a === 'probe' && (await this.claimProbe(c, e, now))) {
        kept.push(c);
        probed = c.model;
      } else skipped.push({ c, openedAt: e.view.openedAt });
    }
    const base = this.byLatency(orgId, router, kept, timing, stickyFirst && kept[0] === eligible[0]);
    const codes = [...skipped.map((s) => `breaker_open:${s.c.model}`), ...(probed ? [`probe:${probed}`] : []), ...base.codes];
    if (skipped.length === 0) return probed ? { order: base.order, note: join(base.note, `${probed} was tried as its circuit breaker's probe.`), codes } : base;
    const names = skipped.map((s) => s.c.model).join(', ');
    if (kept.length) return { order: base.order, note: join(base.note, `Skipped while their circuit breaker is open: ${names}.${probed ? ` ${probed} was tried as its circuit breaker's probe.` : ''}`), codes };
    const oldest = skipped.reduce((a, b) => (b.openedAt < a.openedAt ? b : a));
    return { order: [oldest.c], note: `Every eligible model's circuit breaker is open (${names}); ${oldest.c.model}, open the longest, was tried anyway.`, codes: ['all_open', ...codes] };
  }

  /**
   * Among candidates the policy leaves equal (a `cheapest` router's price ties), the lower recent latency first,
   * unless the router turns that off (`prefer_low_latency: false`).
   */
  private byLatency(orgId: string, router: RouterDoc, order: CandidateDoc[], timing: Timing, stickyFirst: boolean): HealthPlan {
    if (router.policy !== 'cheapest' || router.prefer_low_latency === false || order.length < 2) return { order, note: null, codes: NO_CODES };
    let out: CandidateDoc[] | null = null;
    const from = stickyFirst ? 1 : 0;
    for (let i = from; i < order.length; ) {
      let j = i + 1;
      const price = order[i].input_price + order[i].output_price;
      while (j < order.length && order[j].input_price + order[j].output_price === price) j++;
      if (j - i > 1) {
        const run = order.slice(i, j);
        const ms = (c: CandidateDoc) => this.get(orgId, router.router_id, c.model)?.[timing] ?? 0;
        const sorted = [...run].sort((a, b) => ms(a) - ms(b));
        if (sorted.some((c, k) => c !== run[k])) {
          out ??= [...order];
          out.splice(i, j - i, ...sorted);
        }
      }
      i = j;
    }
    if (!out) return { order, note: null, codes: NO_CODES };
    const first = out[from];
    const ms = Math.round(this.get(orgId, router.router_id, first.model)?.[timing] ?? 0);
    const what = timing === 'first_token' ? 'time to first token' : 'answer time';
    return { order: out, note: `Among equally priced models, ${first.model} has the lowest recent ${what} (${ms} ms).`, codes: [timing === 'first_token' ? 'lower_ttft' : 'lower_answer_time'] };
  }

  /** A committed attempt: closes the breaker if this process knew it was not closed, and updates the latency. */
  succeeded(orgId: string, routerId: string, c: CandidateDoc, ms: number, timing: Timing): void {
    const e = this.get(orgId, routerId, c.model) ?? this.put(orgId, routerId, c.model, CLOSED, 0);
    e[timing] = e[timing] === 0 ? ms : e[timing] + EWMA_WEIGHT * (ms - e[timing]);
    if (this.policy.failures <= 0 || (e.view.failures === 0 && e.view.openedAt === 0)) return;
    const wasOpen = e.view.openedAt !== 0;
    e.view = CLOSED;
    if (wasOpen) this.count(c.model, 'closed');
    this.redis.eval(SUCCEED, 1, e.key).then(
      (o) => {
        if (!wasOpen && Number(o) > 0) this.count(c.model, 'closed');
      },
      () => undefined,
    );
  }

  /** A retryable failure (an error status, a network error, a timeout) before the call committed to `c`. */
  async failed(orgId: string, routerId: string, c: CandidateDoc): Promise<void> {
    if (this.policy.failures <= 0) return;
    const now = this.now();
    const e = this.get(orgId, routerId, c.model) ?? this.put(orgId, routerId, c.model, CLOSED, 0);
    const before = e.view;
    try {
      const [f, o, p] = (await this.redis.eval(FAIL, 1, e.key, this.policy.failures, now, this.ttlMs)) as number[];
      e.view = { failures: Number(f), openedAt: Number(o), probeUntil: Number(p) };
      e.fetchedAt = now;
      if (Number(o) === now && before.openedAt !== now) this.count(c.model, 'open');
    } catch {
      // Redis unavailable: this process still keeps its own breaker.
      e.view = afterFailure(before, now, this.policy);
      if (e.view.openedAt !== before.openedAt) this.count(c.model, 'open');
    }
  }

  private async claimProbe(c: CandidateDoc, e: Entry, now: number): Promise<boolean> {
    try {
      const [won, f, o, p] = (await this.redis.eval(PROBE, 1, e.key, now, this.policy.coolDownMs)) as number[];
      e.view = { failures: Number(f), openedAt: Number(o), probeUntil: Number(p) };
      e.fetchedAt = now;
      if (Number(won) === 1) this.count(c.model, 'half_open');
      return Number(won) >= 0;
    } catch {
      return true;
    }
  }

  private async load(orgId: string, routerId: string, model: string): Promise<Entry> {
    let view = CLOSED;
    try {
      view = viewOf(await this.redis.hmget(this.keys.routingBreaker(orgId, routerId, model), 'f', 'o', 'p'));
    } catch {
      // Unknown is closed: Redis being down never takes candidates out.
    }
    // Put only once read: a call meanwhile waits for its own read rather than trusting an unread breaker.
    return this.put(orgId, routerId, model, view, this.now());
  }

  private refresh(e: Entry): void {
    if (e.refreshing) return;
    e.refreshing = true;
    this.redis.hmget(e.key, 'f', 'o', 'p').then(
      (v) => {
        e.view = viewOf(v);
        e.fetchedAt = this.now();
        e.refreshing = false;
      },
      () => {
        e.fetchedAt = this.now();
        e.refreshing = false;
      },
    );
  }

  private get(orgId: string, routerId: string, model: string): Entry | undefined {
    return this.entries.get(orgId)?.get(routerId)?.get(model);
  }

  private put(orgId: string, routerId: string, model: string, view: BreakerView, fetchedAt: number): Entry {
    // Bounded: a process serving very many routers forgets them all at once and re-reads what it uses.
    if (this.size >= MAX_ENTRIES) {
      this.entries.clear();
      this.size = 0;
    }
    let routers = this.entries.get(orgId);
    if (!routers) this.entries.set(orgId, (routers = new Map()));
    let models = routers.get(routerId);
    if (!models) routers.set(routerId, (models = new Map()));
    const e: Entry = { key: this.keys.routingBreaker(orgId, routerId, model), view, fetchedAt, refreshing: false, whole: 0, first_token: 0 };
    if (!models.has(model)) this.size++;
    models.set(model, e);
    return e;
  }

  private count(model: string, to: string): void {
    this.opts.metrics?.routerBreakerTransitions.inc(TRANSITIONS.of(model, to));
  }
}

function viewOf(v: (string | null)[]): BreakerView {
  const [f, o, p] = v.map((x) => Number(x ?? 0));
  return f === 0 && o === 0 && p === 0 ? CLOSED : { failures: f, openedAt: o, probeUntil: p };
}

const join = (a: string | null, b: string): string => (a ? `${a} ${b}` : b);
