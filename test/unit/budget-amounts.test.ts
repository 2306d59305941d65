import assert from 'node:assert/strict';
import { budgetSchema, MAX_BUDGET_USD, toMicros } from '../../src/domain/budget.js';
import { sessionFields } from '../../src/edge/api/routes/sessions/schema.js';
import { compile, type JsonSchema } from '../../src/lib/schemas/validator.js';

/**
 * Every budget amount a request may set is at least one micro-dollar once counted: a positive amount that rounded
 * to 0 micros was a budget spent before anything was (every turn refused 402 with "0 USD" spent), which the fuzz of
 * PATCH /v1/organization (5e-324) left for POST /v1/sessions/{session_id}/messages/sync to meet.
 */
describe('budget amounts: what the document takes, the counters can hold', () => {
  const budgetBody = compile(budgetSchema as unknown as JsonSchema);
  const sessionBody = compile({ type: 'object', properties: { budget_usd: sessionFields.budget_usd } });
  const amountSchemas: [string, (v: number) => boolean][] = [
    ['a budget body (organization, key)', (v) => budgetBody({ amount_usd: v, period: 'day' })],
    ['a session budget_usd', (v) => sessionBody({ budget_usd: v })],
  ];

  for (const [what, valid] of amountSchemas) {
    it(`${what}: no amount taken rounds to a budget of zero`, () => {
      for (const v of [0, 5e-324, 1e-9, 4.9e-7, 5e-7, 9.99e-7]) assert.equal(valid(v), false, `${v} is refused`);
      for (const v of [0.000001, 0.0000014, 0.25, MAX_BUDGET_USD]) assert.equal(valid(v), true, `${v} is taken`);
      // Bounded sweep across the smallest amounts, where rounding bites.
      for (let i = 0; i < 2000; i++) {
        const v = Math.random() * 0.00001;
        if (valid(v)) assert.ok(toMicros(v) >= 1, `${v} USD is taken and counts as ${toMicros(v)} micros`);
      }
    });
  }
});
