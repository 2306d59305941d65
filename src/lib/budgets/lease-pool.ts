import type { BudgetRef } from '../../domain/budget.js';
import { toMicros } from '../../domain/budget.js';
import { isRefusal, type BudgetCounters, type Grant, type Refusal, type Reservation } from './budget-counters.js';

/** A lease asks for room for this many calls at the asking call's bound... */
const LEASE_CALLS = 50;
/** ...but never more than this share of the smallest budget, so processes do not hold each other's room for long. */
const LEASE_SHARE = 0.05;
const MAX_LEASES = 10_000;

interface Lease {
  /** The terms and periods it was granted under: a lease of other terms is replaced, not drawn from. */
  sig: string;
  grant: Grant | null;
  /** Micro-dollars of the grant not yet handed to a call. */
  left: number;
  takenAt: number;
  /** While the lease is being asked for: the calls that need it wait on this. */
  pending: Promise<void> | null;
  refused: { refusal: Refusal; least: number } | null;
}

/**
 * A process's leases on budget room: one reservation in Redis covers many calls, each admitted by taking its
 * bound from the lease in memory, so a routed call's admission costs no round trip while the budget has room. A
 * lease is asked for when the last one cannot cover a call: one ask at a time per set of budgets, the calls that
 * need it waiting for it. Each call's settle gives its part back to Redis and adds its cost; what a lease has not
 * handed out is given back when the lease is replaced, or by its deadline if the process dies. Overshoot stays
 * bounded as with one reservation per call (every admitted call's bound is reserved), at the price that a lease
 * holds room another process cannot use until it is given back: near the end of a budget leases are small.
 */
export class LeasePool {
  private readonly leases = new Map<string, Lease>();

  constructor(private readonly counters: BudgetCounters) {}

  /** Admits a call whose cost is at most `micros`: its share of a lease, or the refusal of the budget with no room. */
  async admit(orgId: string, refs: BudgetRef[], micros: number): Promise<Reservation | Refusal> {
    const periods = this.counters.periodsOf(refs);
    // One lease per org and set of budgets; a change of amount or a new period replaces it (its rest given back).
    const owners = `${orgId}|${refs.map((r) => `${r.scope}:${r.id}`).join('|')}`;
    const sig = signature(orgId, refs, periods);
    // Bounded: each pass either takes from a lease, returns a refusal, or waits for one ask.
    for (let pass = 0; pass < 1000; pass++) {
      const l = this.leases.get(owners);
      if (l?.pending) {
        await l.pending;
        if (l.refused && micros >= l.refused.least) return l.refused.refusal;
        // Others waited for this lease too: take from it, or ask again.
        continue;
      }
      if (l?.grant && l.sig === sig && l.left >= micros && this.counters.now() - l.takenAt < this.counters.holdMs / 2) {
        l.left -= micros;
        return { ...l.grant, micros };
      }
      const refused = await this.renew(owners, sig, l, orgId, refs, periods, micros);
      if (refused) return refused;
    }
    return this.counters.reserve(orgId, refs, micros, micros, periods);
  }

  /** Asks for a new lease in place of `old`, giving back what `old` had not handed out. */
  private async renew(owners: string, sig: string, old: Lease | undefined, orgId: string, refs: BudgetRef[], periods: string[], micros: number): Promise<Refusal | null> {
    if (old?.grant && old.left > 0) {
      void this.counters.settle({ ...old.grant, micros: old.left }, 0).catch(() => undefined);
      old.left = 0;
    }
    const smallest = Math.min(...refs.map((r) => toMicros(r.budget.amount_usd)));
    const wanted = Math.max(micros, Math.min(LEASE_CALLS * micros, Math.floor(smallest * LEASE_SHARE)));
    const lease: Lease = { sig, grant: null, left: 0, takenAt: this.counters.now(), pending: null, refused: null };
    let failure: unknown = null;
    lease.pending = this.counters.reserve(orgId, refs, wanted, micros, periods).then(
      (r) => {
        if (isRefusal(r)) lease.refused = { refusal: r, least: micros };
        else {
          lease.grant = r;
          lease.left = r.micros;
        }
      },
      (e: unknown) => void (failure = e),
    ).finally(() => {
      lease.pending = null;
      // A refused or failed ask leaves no lease: the next call asks again (the budget may have been raised).
      if (!lease.grant && this.leases.get(owners) === lease) this.leases.delete(owners);
    });
    if (this.leases.size >= MAX_LEASES) this.leases.clear();
    this.leases.set(owners, lease);
    await lease.pending;
    // Redis could not be asked: the call fails as any call does when a store is briefly unreachable (503).
    if (failure) throw failure;
    return lease.refused?.refusal ?? null;
  }

  /** Gives back every lease's room not handed out (at shutdown). */
  async close(): Promise<void> {
    const out = [...this.leases.values()].filter((l) => l.grant && l.left > 0);
    this.leases.clear();
    await Promise.allSettled(out.map((l) => this.counters.settle({ ...l.grant!, micros: l.left }, 0)));
  }
}

/** One lease per org, set of budgets (their terms) and period. */
function signature(orgId: string, refs: BudgetRef[], periods: string[]): string {
  return `${orgId}|${refs.map((r, i) => `${r.scope}:${r.id}:${r.budget.amount_usd}:${periods[i]}`).join('|')}`;
}
