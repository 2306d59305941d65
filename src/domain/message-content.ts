/**
 * What a user message holds, as JSON Schemas: the request bodies that carry one (src/edge/api/routes/sessions/schema.ts,
 * session batches) validate with these, and the `user.message` ledger event's data (event-schemas.ts) is built from
 * them, so the type of that data (event-data.ts) is what the requests accept. Plain data `as const`: the literal types
 * are what `FromSchema` reads.
 */

export const MAX_CONTENT_BLOCKS = 100;
export const MAX_METADATA_KEYS = 50;

export const metadataSchema = {
  type: 'object',
  maxProperties: MAX_METADATA_KEYS,
  propertyNames: { pattern: '^[A-Za-z0-9_-]{1,64}$' },
  additionalProperties: { type: 'string', maxLength: 512 },
  description: 'String-to-string map; keys 1-64 of [A-Za-z0-9_-], values up to 512 characters.',
} as const;

const contentBlock = {
  oneOf: [
    { type: 'object', additionalProperties: false, required: ['type', 'text'], properties: { type: { const: 'text' }, text: { type: 'string', minLength: 1, maxLength: 200_000 } } },
    { type: 'object', additionalProperties: false, required: ['type', 'file_id'], properties: { type: { const: 'file' }, file_id: { type: 'string', minLength: 1, maxLength: 64 } } },
    { type: 'object', additionalProperties: false, required: ['type', 'file_id'], properties: { type: { const: 'image' }, file_id: { type: 'string', minLength: 1, maxLength: 64 } } },
  ],
} as const;

export const contentSchema = { type: 'array', minItems: 1, maxItems: MAX_CONTENT_BLOCKS, items: contentBlock } as const;
