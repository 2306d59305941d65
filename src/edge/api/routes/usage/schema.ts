import type { JsonSchema } from '../../../../lib/schemas/validator.js';
import { budgetStandingSchema } from '../../../../domain/budget.js';

const cost: JsonSchema = {
  type: 'array',
  description: 'Cost per currency, from the per-million-token prices of llm options and router candidates.',
  items: { type: 'object', required: ['currency', 'amount'], properties: { currency: { type: 'string' }, amount: { type: 'number' } } },
};

const figures: Record<string, JsonSchema> = {
  model_calls: { type: 'integer' },
  input_tokens: { type: 'integer' },
  output_tokens: { type: 'integer' },
  cost,
  unpriced_model_calls: { type: 'integer', description: 'Calls of models with no configured price; not in cost.' },
};
const figureNames = Object.keys(figures);

export const figuresSchema: JsonSchema = { type: 'object', required: figureNames, properties: figures };

/** The range and grouping, checked as given; the page (limit, after) is the route's `list` declaration's. */
export const usageFilterQuery: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    from: { type: 'string', format: 'date-time', description: 'Inclusive; rounded down to the hour (usage is kept per UTC hour).' },
    to: { type: 'string', format: 'date-time', description: 'Exclusive.' },
    group_by: { type: 'string', enum: ['model', 'agent', 'session'], default: 'model' },
  },
};

/** Spend against each budget in force, this period (docs/budgets.md). */
const budgetsSchema: JsonSchema = {
  type: 'array',
  description: 'Each budget in force with what is spent of it in its current period (spend is counted as calls settle, so it runs ahead of the hourly usage records above).',
  items: budgetStandingSchema,
};

export const orgUsageResponse: JsonSchema = {
  type: 'object',
  required: ['from', 'to', 'group_by', 'groups', 'has_more', 'next_cursor', 'totals'],
  properties: {
    from: { type: ['string', 'null'], format: 'date-time' },
    to: { type: ['string', 'null'], format: 'date-time' },
    group_by: { type: 'string', enum: ['model', 'agent', 'session'] },
    groups: {
      type: 'array',
      description: 'One row per model, agent_id or session_id, in key order (null first), a page at a time; a null agent_id or session_id is routing-interface traffic.',
      items: { type: 'object', required: figureNames, properties: { model: { type: 'string' }, agent_id: { type: ['string', 'null'] }, session_id: { type: ['string', 'null'] }, ...figures } },
    },
    has_more: { type: 'boolean' },
    next_cursor: { type: ['string', 'null'] },
    totals: { ...figuresSchema, description: 'The whole range, on every page.' },
    budgets: { ...budgetsSchema, description: "The organization's budget and each active key's, with this period's spend." },
  },
};

export const sessionUsageResponse: JsonSchema = {
  type: 'object',
  required: ['session_id', 'models', 'totals'],
  properties: {
    session_id: { type: 'string' },
    models: { type: 'array', items: { type: 'object', required: ['model', ...figureNames], properties: { model: { type: 'string' }, ...figures } } },
    totals: figuresSchema,
    budgets: { ...budgetsSchema, description: "The budgets the session's calls count against (the org's, its creating key's, its own), with this period's spend." },
  },
};
