import type { UsageDoc } from '../store/usage.js';

export type GroupBy = 'model' | 'agent' | 'session';

export interface Cost {
  currency: string;
  amount: number;
}

export interface UsageFigures {
  model_calls: number;
  input_tokens: number;
  output_tokens: number;
  /** One entry per currency the calls were priced in; empty when none was. */
  cost: Cost[];
  /** Calls of models without a configured price (not in `cost`). */
  unpriced_model_calls: number;
}

class Tally {
  calls = 0;
  input = 0;
  output = 0;
  unpriced = 0;
  readonly costs = new Map<string, number>();

  add(d: UsageDoc): void {
    this.calls += d.requests;
    this.input += d.input_tokens;
    this.output += d.output_tokens;
    if (d.currency) this.costs.set(d.currency, (this.costs.get(d.currency) ?? 0) + (d.cost ?? 0));
    else this.unpriced += d.requests;
  }

  figures(): UsageFigures {
    // Micro-units: enough for per-token prices, and free of float noise like 0.30000000000000004.
    const cost = [...this.costs].sort(([a], [b]) => a.localeCompare(b)).map(([currency, amount]) => ({ currency, amount: Math.round(amount * 1e6) / 1e6 }));
    return { model_calls: this.calls, input_tokens: this.input, output_tokens: this.output, cost, unpriced_model_calls: this.unpriced };
  }
}

const FIELD = { model: 'model', agent: 'agent_id', session: 'session_id' } as const;

/**
 * Sums usage records into one row per model, agent or session (null agent
 * and session = routing-interface traffic), sorted by key, plus totals.
 */
export type UsageGroup = UsageFigures & { model?: string | null; agent_id?: string | null; session_id?: string | null };

export async function summarize(docs: Iterable<UsageDoc> | AsyncIterable<UsageDoc>, groupBy: GroupBy): Promise<{ groups: UsageGroup[]; totals: UsageFigures }> {
  const field = FIELD[groupBy];
  const groups = new Map<string | null, Tally>();
  const totals = new Tally();
  // Read as a stream: an org's hours of usage can be millions of records, and only the tallies are kept.
  for await (const d of docs) {
    const key = (d[field] as string | null | undefined) ?? null;
    let t = groups.get(key);
    if (!t) groups.set(key, (t = new Tally()));
    t.add(d);
    totals.add(d);
  }
  const rows: UsageGroup[] = [...groups].sort(([a], [b]) => (a ?? '').localeCompare(b ?? '')).map(([key, t]) => ({ [field]: key, ...t.figures() }));
  return { groups: rows, totals: totals.figures() };
}
