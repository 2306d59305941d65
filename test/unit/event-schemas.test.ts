import assert from 'node:assert/strict';
import { openApiDocument } from '../../clients/typescript/codegen/generate.js';
import { EVENT_DATA_SCHEMAS } from '../../src/domain/event-schemas.js';
import { EVENT_TYPES } from '../../src/domain/ledger.js';
import { eventSchemaName } from '../../src/edge/api/routes/sessions/ledger-events.js';
import { createAjv } from '../../src/lib/schemas/validator.js';

/** The event types of `types` that `schemas` has no object schema for. */
function withoutSchema(types: readonly string[], schemas: Record<string, unknown>): string[] {
  return types.filter((t) => !Object.hasOwn(schemas, t) || (schemas[t] as { type?: unknown } | undefined)?.type !== 'object');
}

type Components = { components: { schemas: Record<string, { properties: { data: unknown } }> } };

/**
 * Each event's data is defined once, in src/domain/event-schemas.ts: the EventData type is derived from it (the
 * compiler's side is test/unit/event-data-types.test.ts) and the document publishes it. Here: every type of the
 * ledger has its schema, and the document's `data` is that schema rather than a copy of its own.
 */
describe('ledger event data schemas (src/domain/event-schemas.ts)', () => {
  it('has an object schema for every event type of the ledger, and none for a type it does not have', () => {
    assert.deepEqual(withoutSchema(EVENT_TYPES, EVENT_DATA_SCHEMAS), []);
    assert.deepEqual(Object.keys(EVENT_DATA_SCHEMAS).sort(), [...EVENT_TYPES].sort());
    // The check can fail: a type added to EVENT_TYPES without a schema, or with something else, is named.
    assert.deepEqual(withoutSchema([...EVENT_TYPES, 'made.up'], EVENT_DATA_SCHEMAS), ['made.up']);
    assert.deepEqual(withoutSchema(EVENT_TYPES, { ...EVENT_DATA_SCHEMAS, 'user.message': { oneOf: [] } }), ['user.message']);
  });

  it("compiles each with the API's strict Ajv", () => {
    const ajv = createAjv('api');
    for (const t of EVENT_TYPES) assert.doesNotThrow(() => ajv.compile(EVENT_DATA_SCHEMAS[t]), t);
  });

  it("is what /v1/openapi.json publishes as each event's data", () => {
    const schemas = (openApiDocument() as Components).components.schemas;
    for (const t of EVENT_TYPES) {
      const data = schemas[eventSchemaName(t)].properties.data;
      // tool.call_requested's data names the webhook body's component, which is the same schema.
      if (t === 'tool.call_requested') {
        assert.deepEqual(data, { $ref: '#/components/schemas/ToolCallRequestedWebhook' });
        assert.deepEqual(schemas.ToolCallRequestedWebhook, EVENT_DATA_SCHEMAS[t]);
      } else assert.deepEqual(data, EVENT_DATA_SCHEMAS[t], t);
    }
  });
});
