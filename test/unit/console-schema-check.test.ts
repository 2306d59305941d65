import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { compile } from '../../src/lib/schemas/validator.js';
import { checkSchema } from '../../clients/console/src/schema-check.js';

const forecast = JSON.parse(readFileSync(join(__dirname, '../../../examples/weather-agent/tools/schemas/get_forecast.output.json'), 'utf8')) as Record<string, unknown>;

const strict = {
  type: 'object',
  additionalProperties: false,
  required: ['kind', 'tags'],
  properties: {
    kind: { enum: ['a', 'b'] },
    tags: { type: 'array', minItems: 1, maxItems: 2, items: { type: 'string', minLength: 2, pattern: '^[a-z]+$' } },
    score: { type: ['integer', 'null'], minimum: 0, maximum: 10 },
    nested: { type: 'object', additionalProperties: { type: 'number' } },
    either: { oneOf: [{ type: 'string' }, { type: 'integer' }] },
    any: { anyOf: [{ const: 1 }, { const: 'one' }] },
  },
};

const cases: [Record<string, unknown>, unknown][] = [
  [forecast, { city: 'Oslo', summary: 'rain', high_c: 12, low_c: 6 }],
  [forecast, { city: 'Oslo', summary: 'rain', high_c: 12.5, low_c: 6, precipitation_mm: 0 }],
  [forecast, { city: 'Oslo', high_c: 'warm' }],
  [forecast, { city: 'Oslo', summary: 'rain', high_c: 12, low_c: 6, precipitation_mm: -1 }],
  [forecast, []],
  [forecast, null],
  [strict, { kind: 'a', tags: ['ab'] }],
  [strict, { kind: 'c', tags: ['ab'] }],
  [strict, { kind: 'a', tags: [] }],
  [strict, { kind: 'a', tags: ['ab', 'cd', 'ef'] }],
  [strict, { kind: 'a', tags: ['a'] }],
  [strict, { kind: 'a', tags: ['AB'] }],
  [strict, { kind: 'a', tags: ['ab'], extra: 1 }],
  [strict, { kind: 'a', tags: ['ab'], score: null }],
  [strict, { kind: 'a', tags: ['ab'], score: 1.5 }],
  [strict, { kind: 'a', tags: ['ab'], score: 11 }],
  [strict, { kind: 'a', tags: ['ab'], nested: { x: 1, y: 'no' } }],
  [strict, { kind: 'a', tags: ['ab'], either: 'x' }],
  [strict, { kind: 'a', tags: ['ab'], either: 1.5 }],
  [strict, { kind: 'a', tags: ['ab'], any: 'one' }],
  [strict, { kind: 'a', tags: ['ab'], any: 2 }],
];

describe('console output_schema check', () => {
  it('agrees with ajv (the server’s validator) on what is valid', () => {
    for (const [schema, value] of cases) {
      const ajvOk = compile(schema)(value);
      const errors = checkSchema(schema, value);
      assert.equal(errors.length === 0, ajvOk, `${JSON.stringify(value)}: ajv ${ajvOk}, console ${errors.join('; ') || 'ok'}`);
    }
  });

  it('names each problem by path', () => {
    assert.deepEqual(checkSchema(forecast, { city: 'Oslo', high_c: 'warm' }), ['$.summary is required', '$.low_c is required', '$.high_c must be number, not string']);
    assert.deepEqual(checkSchema(undefined, { anything: true }), []);
  });
});
