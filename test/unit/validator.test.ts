import assert from 'node:assert/strict';
import { InvalidRequestError } from '../../src/domain/errors.js';
import { check } from '../../src/schemas/validator.js';

const schema = {
  type: 'object',
  additionalProperties: false,
  required: ['items'],
  properties: {
    items: { type: 'array', items: { type: 'object', required: ['agent_id'], properties: { agent_id: { type: 'string' } } } },
    format: { enum: ['tar.gz'] },
  },
};

describe('check', () => {
  it('names the offending field in param', () => {
    assert.throws(
      () => check(schema, { items: [{ agent_id: 'a' }, {}] }),
      (e: unknown) => e instanceof InvalidRequestError && e.param === 'items[1].agent_id' && /is required/.test(e.message),
    );
    assert.throws(() => check(schema, { items: [], extra: 1 }), (e: unknown) => e instanceof InvalidRequestError && e.param === 'extra');
    assert.throws(() => check(schema, { items: [], format: 'zip' }), /format must be one of: "tar.gz"/);
  });

  it('returns valid input unchanged', () => {
    assert.deepEqual(check(schema, { items: [] }), { items: [] });
  });
});
