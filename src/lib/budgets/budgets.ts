import { BudgetExceededError, fromMicros, standing, toMicros, type Budget, type BudgetRef, type BudgetStanding } from '../../domain/budget.js';
import { ExpiringCache } from '../../domain/expiring-cache.js';
import type { CandidateDoc } from '../../domain/views/router.js';
import type { ApiKeyDoc } from '../../store/api-keys.js';
import type { ApiKeyStore } from '../../store/api-keys.js';
import { costOf } from '../../store/usage.js';
import type { OrgStore } from '../../store/orgs.js';
import type { Logger } from '../log/logger.js';
import { LabelSets } from '../metrics/label-sets.js';
import type { Metrics } from '../metrics/metrics.js';
import { BudgetCounters, isRefusal, type Crossing, type Reservation } from './budget-counters.js';
import { LeasePool } from './lease-pool.js';
import type { Admitted, CallUsage } from '../routing/admission.js';

const TTL_MS = 5000;
const MAX_CACHED = 10_000;
const REFUSALS = new LabelSets<{ scope: string }>(['scope']);
const THRESHOLDS = new LabelSets<{ scope: string; threshold: string }>(['scope', 'threshold']);

/** The output a routed call is assumed to ask for when it names no max tokens: what its reservation bounds. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 4096;

/** What a session's model call counts against: its org, the key that created it, the session itself. */
export interface SessionBudgetFacts {
  _id: string;
  org_id: string;
  api_key_id?: string | null;
  budget_usd?: number | null;
}

/**
 * Who a priced model call is charged to: the budgets in force when it was admitted, and its reservation if it
 * holds one. Settled once, with the cost the usage buffer priced (a routed call's as its admission, a provider
 * call's by the buffer itself); `settled` then answers what it crossed.
 */
export interface BudgetCharge {
  orgId: string;
  refs: BudgetRef[];
  reservation?: Reservation;
  settled?: Promise<Crossing[]>;
}

/** A session budget: a total in USD. */
export const sessionBudget = (amount: number): Budget => ({ amount_usd: amount, period: 'total' });

/**
 * The budgets in force for a call and their admission: which budgets apply (org, key, session), the upper bound a
 * routed call reserves, and the 402. The org's budget is cached for a few seconds per process, like its limits.
 */
export class Budgets {
  private readonly orgs = new ExpiringCache<Budget | null>(TTL_MS, MAX_CACHED);
  private readonly keys = new ExpiringCache<Pick<ApiKeyDoc, '_id' | 'kind' | 'budget'> | null>(TTL_MS, MAX_CACHED);
  /** Called for each threshold a settle crossed first; set by the process that reports them. */
  onCrossing: ((c: Crossing, orgId: string) => void) | null = null;
  private readonly leases: LeasePool;
  private readonly settling = new Map<string, SettleBatch>();

  constructor(
    readonly counters: BudgetCounters,
    private readonly orgStore: Pick<OrgStore, 'byId'>,
    private readonly keyStore: Pick<ApiKeyStore, 'byId'>,
    private readonly log: Logger,
    private readonly metrics: Pick<Metrics, 'budgetRefusals' | 'budgetThresholds'>,
  ) {
    this.leases = new LeasePool(counters);
  }

  /** Gives back the room this process's leases hold and has not used. */
  async close(): Promise<void> {
    await Promise.all([...this.settling.values()].map((b) => b.done));
    await this.leases.close();
  }

  /** The org's budget: cached, so a routed call of an org without one costs no round trip. */
  orgBudget(orgId: string): Budget | null | Promise<Budget | null> {
    const hit = this.orgs.get(orgId);
    if (hit !== undefined) return hit;
    return this.orgStore.byId(orgId).then((o) => {
      const b = o?.budget ?? null;
      this.orgs.set(orgId, b);
      return b;
    });
  }

  /** After a change through this process: its next call sees the new budget at once (others within TTL_MS). */
  forgetOrg(orgId: string): void {
    this.orgs.delete(orgId);
  }

  forgetKey(orgId: string, keyId: string): void {
    this.keys.delete(`${orgId}|${keyId}`);
  }

  /**
   * The key that created a session (its budget may have changed since): cached like the org's, per org and id, so
   * a lookup under another org (a null) can never stand in for the key's own org's answer, nor the other way round.
   */
  private async keyOf(orgId: string, id: string): Promise<Pick<ApiKeyDoc, '_id' | 'kind' | 'budget'> | null> {
    const cacheKey = `${orgId}|${id}`;
    const hit = this.keys.get(cacheKey);
    if (hit !== undefined) return hit;
    const doc = await this.keyStore.byId(id);
    const key = doc && doc.org_id === orgId ? { _id: doc._id, kind: doc.kind, budget: doc.budget ?? null } : null;
    this.keys.set(cacheKey, key);
    return key;
  }

  /** The budgets in force: the org's, the calling key's (or the key that created the session), the session's. */
  async refsOf(orgId: string, key: Pick<ApiKeyDoc, '_id' | 'kind' | 'budget'> | null, session?: SessionBudgetFacts | null): Promise<BudgetRef[]> {
    const refs: BudgetRef[] = [];
    const ob = await this.orgBudget(orgId);
    if (ob) refs.push({ scope: 'org', id: orgId, budget: ob });
    if (!key && session?.api_key_id) key = await this.keyOf(orgId, session.api_key_id);
    if (key?.budget) refs.push({ scope: key.kind === 'routing' ? 'routing_key' : 'api_key', id: key._id, budget: key.budget });
    if (session?.budget_usd) refs.push({ scope: 'session', id: session._id, budget: sessionBudget(session.budget_usd) });
    return refs;
  }

  /**
   * A routed call's admission: reserves the most it can cost on every budget in force (null when none is), or
   * throws the 402. The bound is the dearest USD candidate's prices for `inputBound` tokens in and the request's
   * max tokens out.
   */
  async admitRouted(orgId: string, key: Pick<ApiKeyDoc, '_id' | 'org_id'>, candidates: readonly CandidateDoc[], maxTokens: number | undefined, inputBound: number): Promise<HeldCharge | null> {
    // The key's budget from this cache, not the authenticator's copy: a change made through this process applies at once.
    const refs = await this.refsOf(orgId, await this.keyOf(orgId, key._id));
    if (!refs.length) return null;
    const micros = toMicros(maxCost(candidates, maxTokens, inputBound));
    const r = await this.leases.admit(orgId, refs, micros);
    if (isRefusal(r)) throw this.refusal(r.ref, r.spentMicros);
    return new HeldCharge(this, orgId, refs, r);
  }

  /** A charge as the admission of the model call it pays for (routed calls and session turns alike). */
  held(charge: BudgetCharge): HeldCharge {
    return new HeldCharge(this, charge.orgId, charge.refs, charge.reservation);
  }

  /** A turn's admission: none of its budgets is spent (402 otherwise); nothing is reserved. */
  async check(orgId: string, refs: BudgetRef[]): Promise<void> {
    if (!refs.length) return;
    const r = await this.counters.reserve(orgId, refs, 0);
    if (isRefusal(r)) throw this.refusal(r.ref, r.spentMicros);
  }

  /** The 402, counted here: every refusal (routed call, turn intake, a queued turn's model call) is built by this. */
  refusal(ref: BudgetRef, spentMicros: number): BudgetExceededError {
    this.metrics.budgetRefusals.inc(REFUSALS.of(ref.scope));
    return new BudgetExceededError(standing(ref, spentMicros, this.counters.now()));
  }

  /** Each budget with what its current period has spent. */
  async standings(orgId: string, refs: BudgetRef[]): Promise<BudgetStanding[]> {
    const spent = await this.counters.spent(orgId, refs);
    const now = this.counters.now();
    return refs.map((r, i) => standing(r, spent[i], now));
  }

  /** Settles a charge with the call's actual cost in USD (0 for a call that failed); never throws. */
  settle(charge: BudgetCharge, costUsd: number): Promise<Crossing[]> {
    const r: Pick<Reservation, 'orgId' | 'refs'> & Partial<Reservation> = charge.reservation ?? { orgId: charge.orgId, refs: charge.refs };
    const periods = r.periods ?? this.counters.periodsOf(r.refs);
    const key = `${r.orgId}|${r.refs.map((x, i) => `${x.scope}:${x.id}:${x.budget.amount_usd}:${periods[i]}`).join('|')}|${r.id ?? '-'}`;
    let batch = this.settling.get(key);
    if (!batch) {
      const b: SettleBatch = { cost: 0, part: 0, done: null! };
      b.done = new Promise<Crossing[]>((resolve) => setTimeout(() => resolve(this.flush(key, b, { ...r, periods })), SETTLE_BATCH_MS));
      this.settling.set(key, (batch = b));
    }
    batch.cost += toMicros(costUsd);
    batch.part += r.micros ?? 0;
    return (charge.settled = batch.done);
  }

  /** One script for every settle of the same reservation in the last few ms. */
  private flush(key: string, b: SettleBatch, r: Pick<Reservation, 'orgId' | 'refs' | 'periods'> & Partial<Reservation>): Promise<Crossing[]> {
    this.settling.delete(key);
    return this.counters.settle({ ...r, micros: b.part }, b.cost).then(
      (crossed) => {
        for (const c of crossed) {
          this.log.info({ org_id: r.orgId, scope: c.ref.scope, id: c.ref.id, threshold: c.threshold, spent_usd: fromMicros(c.spentMicros) }, 'budget threshold reached');
          this.metrics.budgetThresholds.inc(THRESHOLDS.of(c.ref.scope, String(c.threshold)));
          this.onCrossing?.(c, r.orgId);
        }
        return crossed;
      },
      (err) => {
        this.log.warn({ err }, 'could not count spend against budgets');
        return [];
      },
    );
  }
}

/**
 * A charge as an admission: settled with the call's USD cost; a call that ends without usage gives its reservation
 * back (a turn's charge holds none, so it gives nothing back). A class, not closures: one object per routed call.
 */
export class HeldCharge implements BudgetCharge, Admitted {
  settled?: Promise<Crossing[]>;

  constructor(
    private readonly budgets: Budgets,
    readonly orgId: string,
    readonly refs: BudgetRef[],
    readonly reservation?: Reservation,
  ) {}

  settle(u: CallUsage): void {
    void this.budgets.settle(this, u.usd);
  }

  release(): void {
    if (this.reservation && !this.settled) void this.budgets.settle(this, 0);
  }
}

/**
 * Settles of one reservation (a lease's calls) are summed for this long and sent as one script: a script per call
 * cost a loaded Redis, and so the next calls' round trips, more than the check itself. The spend shows this much
 * later; a call's part of its reservation stays held as long, which only errs on the safe side.
 */
const SETTLE_BATCH_MS = 5;

interface SettleBatch {
  cost: number;
  part: number;
  done: Promise<Crossing[]>;
}

/** The most a call can cost in USD: candidates priced in another currency are not counted against USD budgets. */
export function maxCost(candidates: readonly CandidateDoc[], maxTokens: number | undefined, inputBound: number): number {
  let inPrice = 0;
  let outPrice = 0;
  for (const c of candidates) {
    if ((c.currency ?? 'USD') !== 'USD') continue;
    inPrice = Math.max(inPrice, c.input_price ?? 0);
    outPrice = Math.max(outPrice, c.output_price ?? 0);
  }
  // The dearest input and output prices together: a bound over every candidate the call may fall back to.
  return costOf({ input_price: inPrice, output_price: outPrice, currency: 'USD' }, inputBound, maxTokens ?? DEFAULT_MAX_OUTPUT_TOKENS);
}
