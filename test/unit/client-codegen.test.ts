import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { GENERATED_FILE, generateApiSource, openApiDocument } from '../../clients/typescript/codegen/generate.js';
import { OPERATIONS } from '../../clients/typescript/src/generated/api.js';
import { toTs } from '../../clients/typescript/codegen/json-schema-to-ts.js';

const CLIENT_SRC = join(__dirname, '../../../clients/typescript/src');

describe('TypeScript client types', () => {
  it('are generated from the current OpenAPI document (run `npm run generate:client` when this fails)', () => {
    assert.equal(readFileSync(GENERATED_FILE, 'utf8'), generateApiSource());
  });

  it('cover every operation of the document, and the client calls each one', () => {
    const doc = openApiDocument() as { paths: Record<string, Record<string, { operationId: string }>> };
    const ids = Object.values(doc.paths).flatMap((m) => Object.values(m).map((op) => op.operationId));
    assert.deepEqual(Object.keys(OPERATIONS).sort(), [...ids].sort());
    const source = ['client.ts', 'stream.ts'].map((f) => readFileSync(join(CLIENT_SRC, f), 'utf8')).join('\n');
    // The upload is a PUT to the reservation's upload_url, exactly as given (the spec's contract), not a built path.
    const viaUploadUrl = ['putV1SourceSnapshotsSourceSnapshotIdUpload'];
    const missing = ids.filter((id) => !viaUploadUrl.includes(id) && !source.includes(`'${id}'`));
    assert.deepEqual(missing, [], 'operations without a client method');
  });

  it('turn schemas into the TypeScript types they mean', () => {
    assert.equal(toTs({ type: ['string', 'null'] }), 'string | null');
    assert.equal(toTs({ enum: ['a', 'b'] }), '"a" | "b"');
    assert.equal(toTs({ type: 'array', items: { const: 1 } }), 'Array<1>');
    assert.equal(toTs({ type: 'object', additionalProperties: { type: 'string' } }), '{\n  [key: string]: string;\n}');
    assert.equal(toTs({ type: 'object', required: ['a'], properties: { a: { type: 'integer' }, 'b-c': { type: 'boolean' } } }), '{\n  a: number;\n  "b-c"?: boolean;\n}');
    assert.equal(toTs({ allOf: [{ if: {}, then: { const: 'x' } }, { if: {}, then: { const: 'y' } }] }), '"x" | "y"');
    assert.equal(toTs({ type: 'array', items: { $ref: '#/components/schemas/LedgerEvent' } }), 'Array<LedgerEvent>');
    assert.equal(toTs({}), 'unknown');
  });
});
