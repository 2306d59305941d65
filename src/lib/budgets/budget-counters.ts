import { randomBytes } from 'node:crypto';
import { BUDGET_THRESHOLDS, periodId, toMicros, type BudgetRef, type BudgetThreshold } from '../../domain/budget.js';
import type { RedisClient } from '../redis/connection.js';
import type { RedisKeys } from '../redis/keys.js';

/*
 * Both scripts take, per budget, KEYS counters (hash: spent, res, r:<id> per reservation, t80/t100 once fired) and
 * deadlines (zset: reservation id → ms after which it is given back). ARGV: now, reservation id, then per budget
 * its amount and its keys' lifetime in ms (0: no expiry). All amounts are integer micro-dollars.
 */

// ARGV[3] deadline, ARGV[4] wanted, ARGV[5] least. Grants the most of `wanted` every budget has room for
// (spent + reserved + grant <= amount), reserving it on each under this id; refuses when that is less than `least`
// (or a budget is spent). Returns {grant, 0, 0}, or {-1, index of the first budget short of room, its spent}.
// A reservation left by a process that died is given back once its deadline passes.
const LEASE = `
local now, id, deadline, grant, least = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local n = #KEYS / 2
for i = 1, n do
  local h, z = KEYS[2*i-1], KEYS[2*i]
  for _, r in ipairs(redis.call('ZRANGEBYSCORE', z, '-inf', now)) do
    local a = tonumber(redis.call('HGET', h, 'r:'..r) or '0')
    if a > 0 then redis.call('HINCRBY', h, 'res', -a) end
    redis.call('HDEL', h, 'r:'..r)
    redis.call('ZREM', z, r)
  end
end
for i = 1, n do
  local h = KEYS[2*i-1]
  local amt = tonumber(ARGV[4+2*i])
  local spent = tonumber(redis.call('HGET', h, 'spent') or '0')
  local room = amt - spent - tonumber(redis.call('HGET', h, 'res') or '0')
  if spent >= amt or room < least then return {-1, i, spent} end
  if room < grant then grant = room end
end
if grant > 0 then
  for i = 1, n do
    local h, z, ttl = KEYS[2*i-1], KEYS[2*i], tonumber(ARGV[5+2*i])
    redis.call('HINCRBY', h, 'res', grant)
    redis.call('HSET', h, 'r:'..id, grant)
    redis.call('ZADD', z, deadline, id)
    if ttl > 0 then redis.call('PEXPIRE', h, ttl); redis.call('PEXPIRE', z, ttl) end
  end
end
return {grant, 0, 0}`;

// ARGV[3] actual cost, ARGV[4] the part of reservation `id` the call held (0: none). Adds the cost and gives that
// part back. Returns per budget its spent and which thresholds this call crossed first in the period:
// {spent1, t1, spent2, t2, ...}, t a bit set of BUDGET_THRESHOLDS (1: 80, 2: 100).
const SETTLE = `
local id, cost, part = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local n = #KEYS / 2
local out = {}
for i = 1, n do
  local h, z, amt, ttl = KEYS[2*i-1], KEYS[2*i], tonumber(ARGV[3+2*i]), tonumber(ARGV[4+2*i])
  if part > 0 then
    local a = tonumber(redis.call('HGET', h, 'r:'..id) or '0')
    local back = math.min(a, part)
    if back > 0 then redis.call('HINCRBY', h, 'res', -back) end
    if a - back <= 0 then
      redis.call('HDEL', h, 'r:'..id)
      redis.call('ZREM', z, id)
    else
      redis.call('HINCRBY', h, 'r:'..id, -back)
    end
  end
  local spent = redis.call('HINCRBY', h, 'spent', cost)
  local crossed = 0
  if spent * 100 >= amt * 80 and redis.call('HSETNX', h, 't80', 1) == 1 then crossed = crossed + 1 end
  if spent >= amt and redis.call('HSETNX', h, 't100', 1) == 1 then crossed = crossed + 2 end
  if ttl > 0 then redis.call('PEXPIRE', h, ttl) end
  out[2*i-1] = spent
  out[2*i] = crossed
end
return out`;

const DAY_MS = 86_400_000;
/** Counters outlive their period by a margin, for a report read late and a settle that lands after the boundary. */
const KEEP_MS = { day: 3 * DAY_MS, month: 63 * DAY_MS, total: 0 } as const;

/** A call's hold on its budgets between admission and settle: `micros` of reservation `id`. */
export interface Reservation {
  orgId: string;
  refs: BudgetRef[];
  /** The period ids at admission: a settle after a boundary lands in the period the call was admitted in. */
  periods: string[];
  id: string;
  micros: number;
}

/** A threshold one settle crossed first in its period. */
export interface Crossing {
  ref: BudgetRef;
  threshold: BudgetThreshold;
  period: string;
  spentMicros: number;
}

export type Refusal = { ref: BudgetRef; spentMicros: number };

/** A reservation granted: `micros` under `id`, on every budget in `refs`. */
export type Grant = Reservation;

/**
 * Budget counters in Redis, checked and changed by one script per step so every process agrees and concurrent
 * admissions cannot both take the last of a budget: a reservation is granted only against
 * `spent + reserved + grant <= amount`, and a settle adds the actual cost and gives back the part of the
 * reservation the call held. A crashed holder's reservation is given back after `holdMs`.
 */
export class BudgetCounters {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    readonly holdMs = 15 * 60_000,
    /** The clock: tests move it across a period boundary. */
    public now: () => number = Date.now,
  ) {}

  /**
   * A script by name, sent by its SHA after the first call (ioredis's defineCommand loads it again on NOSCRIPT):
   * every settle runs one, and the script's text is a kilobyte on the wire and to hash each time.
   */
  private script(name: string, lua: string): (...args: (string | number)[]) => Promise<unknown> {
    const r = this.redis as unknown as Record<string, ((...args: (string | number)[]) => Promise<unknown>) | undefined>;
    if (!r[name]) this.redis.defineCommand(name, { lua });
    return (...args) => r[name]!.call(this.redis, ...args);
  }

  private args(orgId: string, refs: BudgetRef[], periods: string[]): { keys: string[]; perBudget: (string | number)[] } {
    const keys: string[] = [];
    const perBudget: (string | number)[] = [];
    refs.forEach((r, i) => {
      const k = this.keys.budget(orgId, r.scope, r.id, periods[i]);
      keys.push(k.counters, k.deadlines);
      perBudget.push(toMicros(r.budget.amount_usd), KEEP_MS[r.budget.period]);
    });
    return { keys, perBudget };
  }

  periodsOf(refs: BudgetRef[]): string[] {
    const now = this.now();
    return refs.map((r) => periodId(r.budget.period, now));
  }

  /**
   * Reserves up to `wanted` micro-dollars on every budget (as much as all have room for), or refuses when that is
   * less than `least`. `wanted` 0 only checks that no budget is spent.
   */
  async reserve(orgId: string, refs: BudgetRef[], wanted: number, least = wanted, periods = this.periodsOf(refs)): Promise<Grant | Refusal> {
    const { keys, perBudget } = this.args(orgId, refs, periods);
    const id = randomBytes(8).toString('hex');
    const now = this.now();
    const [grant, i, spent] = (await this.script('troupeBudgetLease', LEASE)(keys.length, ...keys, now, id, now + this.holdMs, wanted, least, ...perBudget)) as number[];
    if (grant < 0) return { ref: refs[i - 1], spentMicros: spent };
    return { orgId, refs, periods, id, micros: grant };
  }

  /** Adds the actual cost (micro-dollars) and gives back the call's part of its reservation; answers the thresholds crossed. */
  async settle(r: Pick<Reservation, 'orgId' | 'refs'> & Partial<Pick<Reservation, 'periods' | 'id' | 'micros'>>, costMicros: number): Promise<Crossing[]> {
    const periods = r.periods ?? this.periodsOf(r.refs);
    const { keys, perBudget } = this.args(r.orgId, r.refs, periods);
    const out = (await this.script('troupeBudgetSettle', SETTLE)(keys.length, ...keys, this.now(), r.id ?? '-', Math.max(0, Math.round(costMicros)), r.micros ?? 0, ...perBudget)) as number[];
    const crossings: Crossing[] = [];
    r.refs.forEach((ref, i) => {
      const bits = out[2 * i + 1];
      BUDGET_THRESHOLDS.forEach((t, b) => {
        if (bits & (1 << b)) crossings.push({ ref, threshold: t, period: periods[i], spentMicros: out[2 * i] });
      });
    });
    return crossings;
  }

/** What each budget has spent in the current period. */
  async spent(orgId: string, refs: BudgetRef[]): Promise<number[]> {
    if (!refs.length) return [];
    const now = this.now();
    const got = await Promise.all(refs.map((r) => this.redis.hget(this.keys.budget(orgId, r.scope, r.id, periodId(r.budget.period, now)).counters, 'spent')));
    return got.map((v) => Number(v ?? 0));
  }
}

export const isRefusal = (r: Reservation | Refusal): r is Refusal => 'ref' in r;
