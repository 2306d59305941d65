/**
 * Spend budgets: an amount in USD over a UTC day, a UTC month or all time, on an org, a key or a session. Pure
 * rules here (periods, thresholds, the refusal); the atomic counting is src/lib/budgets/budget-counters.ts.
 */
import { ErrorType, TroupeError, type ErrorBody } from './errors.js';

export const BUDGET_PERIODS = ['day', 'month', 'total'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

/** What a client sets: `{amount_usd, period}`. */
export interface Budget {
  amount_usd: number;
  period: BudgetPeriod;
}

/** Whose budget it is: scope and id name one counter family (an org's, a key's, a session's). */
export const BUDGET_SCOPES = ['org', 'api_key', 'routing_key', 'session'] as const;
export type BudgetScope = (typeof BUDGET_SCOPES)[number];

/** A budget in force for one call: its owner and its terms. */
export interface BudgetRef {
  scope: BudgetScope;
  id: string;
  budget: Budget;
}

/** Largest amount taken: keeps micro-dollar counters (integers in Redis) far inside 2^53. */
export const MAX_BUDGET_USD = 1_000_000_000;

/**
 * Smallest amount taken: one micro-dollar, the counters' unit (toMicros). A smaller positive amount rounded to a
 * budget of 0, spent before anything was: every turn refused 402 with "0 USD" spent.
 */
export const MIN_BUDGET_USD = 0.000001;

/** The JSON Schema of a budget body; `null` is allowed where the field clears one. */
export const budgetSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['amount_usd', 'period'],
  properties: {
    amount_usd: { type: 'number', minimum: MIN_BUDGET_USD, maximum: MAX_BUDGET_USD, description: 'Spend allowed per period, in USD.' },
    period: { type: 'string', enum: [...BUDGET_PERIODS], description: '`day` and `month` reset at UTC midnight and at the first of the month (UTC); `total` never resets.' },
  },
} as const;

export const nullableBudgetSchema = { oneOf: [budgetSchema, { type: 'null' }], description: 'A spend budget; null clears it.' } as const;

/** Counters are integers of micro-dollars, so Lua adds them exactly. */
export const toMicros = (usd: number): number => Math.round(usd * 1_000_000);
export const fromMicros = (micros: number): number => micros / 1_000_000;

/** The period a moment falls in, as a key suffix: `d2026-11-29`, `m2026-11`, or `t`. */
export function periodId(period: BudgetPeriod, now: number): string {
  if (period === 'total') return 't';
  const iso = new Date(now).toISOString();
  return period === 'day' ? `d${iso.slice(0, 10)}` : `m${iso.slice(0, 7)}`;
}

/** When the period that holds `now` ends (UTC), or null for a total budget. */
export function resetsAt(period: BudgetPeriod, now: number): Date | null {
  if (period === 'total') return null;
  const d = new Date(now);
  if (period === 'day') return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1));
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1));
}

/** The fractions of a budget at which `budget.threshold_reached` is recorded, once each per period. */
export const BUDGET_THRESHOLDS = [80, 100] as const;
export type BudgetThreshold = (typeof BUDGET_THRESHOLDS)[number];

/** A budget as reported: its terms, what is spent of it this period, and when the period ends. */
export interface BudgetStanding {
  scope: BudgetScope;
  id: string;
  amount_usd: number;
  period: BudgetPeriod;
  spent_usd: number;
  resets_at: string | null;
}

/** The JSON Schema of a `BudgetStanding`, in a 402's error body and in the usage report alike. */
export const budgetStandingSchema = {
  type: 'object',
  required: ['scope', 'id', 'amount_usd', 'period', 'spent_usd', 'resets_at'],
  properties: {
    scope: { type: 'string', enum: [...BUDGET_SCOPES] },
    id: { type: 'string' },
    amount_usd: { type: 'number' },
    period: { type: 'string', enum: [...BUDGET_PERIODS] },
    spent_usd: { type: 'number' },
    resets_at: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

export function standing(ref: BudgetRef, spentMicros: number, now: number): BudgetStanding {
  const r = resetsAt(ref.budget.period, now);
  return { scope: ref.scope, id: ref.id, amount_usd: ref.budget.amount_usd, period: ref.budget.period, spent_usd: fromMicros(spentMicros), resets_at: r ? r.toISOString() : null };
}

const SCOPE_NAMES: Record<BudgetScope, string> = { org: 'organization', api_key: 'API key', routing_key: 'routing key', session: 'session' };

/** 402 `budget_exceeded`: the body carries the budget that refused and when it resets. */
export class BudgetExceededError extends TroupeError {
  readonly budget: BudgetStanding;

  constructor(budget: BudgetStanding) {
    const when = budget.resets_at ? `it resets at ${budget.resets_at}` : 'it is a total budget and does not reset';
    super(402, ErrorType.paymentRequired, 'budget_exceeded', `The ${SCOPE_NAMES[budget.scope]} budget of ${budget.amount_usd} USD per ${budget.period} is spent (${budget.spent_usd} USD); ${when}.`);
    this.budget = budget;
  }

  override toBody(): ErrorBody {
    return { ...super.toBody(), budget: this.budget };
  }
}
