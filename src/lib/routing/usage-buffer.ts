import type { Logger } from '../log/logger.js';
import type { BudgetCharge, Budgets } from '../budgets/budgets.js';
import type { Metrics } from '../metrics/metrics.js';
import { costOf, type Price, type UsageCounts, type UsageKey, type UsageStore } from '../../store/usage.js';

const ROUTING = { source: 'routing' };
const TURNS = { source: 'turns' };

/** Who a model call is billed to beyond the org: a session's turns name their agent and session. */
export interface UsageSource {
  routerId: string | null;
  agentId?: string | null;
  sessionId?: string | null;
  /** The budgets the call counts against, settled here with its cost. */
  charge?: BudgetCharge | null;
}

/**
 * Sums token counts and cost in memory and writes them once a second, so a
 * model call costs no Mongo round trip of its own. A crash loses at most one
 * interval of counts; close() writes what is left. Streamed and non-streamed
 * calls are added here alike, from the usage their provider reported.
 */
export class UsageBuffer {
  private pending = new Map<string, { key: UsageKey; counts: UsageCounts }>();
  private readonly timer: NodeJS.Timeout;
  private closing: Promise<void> | null = null;

  constructor(
    private readonly store: UsageStore,
    private readonly log: Logger,
    intervalMs = 1000,
    /** Spend budgets; absent, no call is counted against one. */
    private readonly budgets?: Budgets,
    /** Counts priced spend; absent in tests that need no metrics. */
    private readonly metrics?: Pick<Metrics, 'spendUsd'>,
  ) {
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
  }

  /** Counts one call; returns its cost in USD (0 when priced in another currency), for what settles with it. */
  add(orgId: string, source: UsageSource, model: string, input: number, output: number, price: Price | null): number {
    const key: UsageKey = { orgId, routerId: source.routerId, agentId: source.agentId ?? null, sessionId: source.sessionId ?? null, model, currency: price?.currency ?? null };
    const id = JSON.stringify(key);
    const cost = costOf(price, input, output);
    // The one point a call's cost is priced: a provider call's charge is settled here, a routed call's admissions
    // with what this returns (USD only; budgets are set in USD).
    const usd = price?.currency === 'USD' ? cost : 0;
    if (source.charge && this.budgets) this.budgets.settle(source.charge, usd);
    // A session's calls are its turns' (routed in-process or not); the rest came in on the routing interface.
    if (usd > 0) this.metrics?.spendUsd.inc(source.sessionId ? TURNS : ROUTING, usd);
    const p = this.pending.get(id);
    if (p) {
      p.counts.requests++;
      p.counts.input += input;
      p.counts.output += output;
      p.counts.cost += cost;
    } else this.pending.set(id, { key, counts: { requests: 1, input, output, cost } });
    return usd;
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = [...this.pending.values()];
    this.pending = new Map();
    await Promise.all(batch.map((p) => this.store.add(p.key, p.counts).catch((err) => this.log.warn({ err }, 'could not record model usage'))));
  }

  close(): Promise<void> {
    clearInterval(this.timer);
    return (this.closing ??= this.flush());
  }
}
