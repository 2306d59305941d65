import type { UsageField, UsageSum } from '../store/usage.js';

export type GroupBy = 'model' | 'agent' | 'session';

/** The record field each grouping keys on. */
export const GROUP_FIELD: Record<GroupBy, UsageField> = { model: 'model', agent: 'agent_id', session: 'session_id' };

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

  add(s: UsageSum): void {
    this.calls += s.requests;
    this.input += s.input_tokens;
    this.output += s.output_tokens;
    if (s.currency) this.costs.set(s.currency, (this.costs.get(s.currency) ?? 0) + s.cost);
    else this.unpriced += s.requests;
  }

  figures(): UsageFigures {
    // Micro-units: enough for per-token prices, and free of float noise like 0.30000000000000004.
    const cost = [...this.costs].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([currency, amount]) => ({ currency, amount: Math.round(amount * 1e6) / 1e6 }));
    return { model_calls: this.calls, input_tokens: this.input, output_tokens: this.output, cost, unpriced_model_calls: this.unpriced };
  }
}

/** One row per model, agent or session (null agent and session = routing-interface traffic). */
export type UsageGroup = UsageFigures & { model?: string | null; agent_id?: string | null; session_id?: string | null };

export interface GroupPage {
  groups: UsageGroup[];
  has_more: boolean;
  /** Key of the last group when there are more: where the next page starts. */
  last: string | null;
}

/**
 * Folds sums in key order into rows, at most `limit` of them: consecutive sums
 * of one key (one per currency, or one per record) make one row. Stops reading
 * at the first key past the page, so a page costs its own rows, not the range.
 */
export async function groupPage(sums: AsyncIterable<UsageSum> | Iterable<UsageSum>, field: UsageField, limit = Infinity): Promise<GroupPage> {
  const rows: { key: string | null; tally: Tally }[] = [];
  let has_more = false;
  for await (const s of sums) {
    let row = rows[rows.length - 1];
    if (!row || row.key !== s.key) {
      if (rows.length === limit) {
        has_more = true;
        break;
      }
      rows.push((row = { key: s.key, tally: new Tally() }));
    }
    row.tally.add(s);
  }
  return { groups: rows.map((r) => ({ [field]: r.key, ...r.tally.figures() })), has_more, last: has_more ? rows[rows.length - 1].key : null };
}

/** All sums added up: the range's totals. */
export async function totalOf(sums: AsyncIterable<UsageSum> | Iterable<UsageSum>): Promise<UsageFigures> {
  const t = new Tally();
  for await (const s of sums) t.add(s);
  return t.figures();
}
