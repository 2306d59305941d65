import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { checkSchema } from '../../clients/console/src/schema-check.js';
import { resolveConfig } from '../../clients/cli/config.js';
import { devDataDir } from '../../src/domain/dev-data-dir.js';
import { compileUserSchema } from '../../src/lib/schemas/validator.js';

const CHECKOUT = resolve(__dirname, '../../..');

const hit = { type: 'object', required: ['kind', 'value'], properties: { kind: { const: 'hit' }, value: { type: 'number' } } };
const miss = { type: 'object', required: ['kind'], properties: { kind: { const: 'miss' } } };
/** Shapes schema generators write (pydantic, zod-to-json-schema): $ref into definitions / $defs, oneOf of refs, patternProperties. */
const generated: [string, Record<string, unknown>, unknown[]][] = [
  ['oneOf of $refs', { definitions: { hit, miss }, oneOf: [{ $ref: '#/definitions/hit' }, { $ref: '#/definitions/miss' }] }, [{ kind: 'hit', value: 3 }, { kind: 'miss' }, { kind: 'hit' }, { kind: 'other' }]],
  ['$defs and a nested $ref', { $defs: { item: hit }, type: 'object', required: ['items'], properties: { items: { type: 'array', items: { $ref: '#/$defs/item' } } } }, [{ items: [{ kind: 'hit', value: 1 }] }, { items: [{ kind: 'hit' }] }, { items: 'no' }]],
  ['patternProperties with additionalProperties false', { type: 'object', patternProperties: { '^x-': { type: 'string' } }, properties: { id: { type: 'integer' } }, additionalProperties: false }, [{ id: 1, 'x-note': 'a' }, { id: 1, 'x-note': 2 }, { id: 1, other: true }]],
  ['oneOf whose branches differ by a keyword the console does not judge', { oneOf: [{ type: 'string', format: 'email' }, { type: 'string', format: 'uri' }] }, ['a@b.example', 'https://example.com/x']],
  ['not, if/then, exclusive bounds, multipleOf, uniqueItems', { type: 'object', properties: { n: { type: 'number', exclusiveMinimum: 0, multipleOf: 0.5 }, tags: { type: 'array', uniqueItems: true }, s: { not: { const: 'no' } } }, if: { required: ['s'] }, then: { required: ['n'] } }, [{ n: 1.5 }, { n: 0 }, { n: 1.2 }, { tags: [1, 1] }, { tags: [{ a: 1, b: 2 }, { b: 2, a: 1 }] }, { s: 'no', n: 1 }, { s: 'yes' }, { s: 'yes', n: 2 }]],
  ['const and enum of objects, in another key order', { enum: [{ a: 1, b: [1, 2] }] }, [{ b: [1, 2], a: 1 }, { a: 1, b: [2, 1] }]],
];

describe('developer walk: the console never refuses a result the server takes', () => {
  it('agrees with the server’s own validator on schemas as generators write them', () => {
    for (const [name, schema, values] of generated) {
      const validate = compileUserSchema(schema);
      for (const value of values) {
        const server = validate(value);
        const problems = checkSchema(schema, value);
        // Where the console cannot judge a keyword (format) it lets the value through: the server decides then.
        if (server) assert.deepEqual(problems, [], `${name}: ${JSON.stringify(value)} is valid for the server, but the console says ${problems.join('; ')}`);
        else if (!/format/.test(JSON.stringify(schema))) assert.notDeepEqual(problems, [], `${name}: ${JSON.stringify(value)} is refused by the server, and the console let it through`);
      }
    }
  });

  it('names the problem of a oneOf: none matches, or more than one surely does', () => {
    const schema = generated[0][1];
    assert.deepEqual(checkSchema(schema, { kind: 'hit' }), ['$ matches none of the allowed shapes']);
    assert.deepEqual(checkSchema({ oneOf: [{ type: 'number' }, { type: 'integer' }] }, 3), ['$ must match exactly one allowed shape, not 2']);
  });
});

describe('developer walk: a relative TROUPE_DATA_DIR means the same folder to npm start and to the CLI', () => {
  const saved = { cwd: process.cwd(), env: { ...process.env } };
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'troupe-datadir-'));
    for (const k of ['TROUPE_BASE_URL', 'TROUPE_API_KEY', 'TROUPE_PROFILE', 'TROUPE_DATA_DIR']) delete process.env[k];
    process.env.TROUPE_CONFIG = join(dir, 'none.json');
  });
  afterEach(() => {
    process.chdir(saved.cwd);
    process.env = { ...saved.env };
    rmSync(dir, { recursive: true, force: true });
  });

  it('takes it from the checkout, where npm start runs, whatever folder the CLI is run in', () => {
    const data = join(dir, 'data');
    mkdirSync(data);
    writeFileSync(join(data, 'dev-keys.json'), JSON.stringify({ api: 'tr_sk_rel', base_url: 'http://localhost:9380' }));
    const rel = relative(CHECKOUT, data);
    assert.equal(devDataDir(CHECKOUT, rel), data, 'npm start’s folder for it');
    assert.equal(devDataDir(CHECKOUT, undefined), join(CHECKOUT, '.data'));
    mkdirSync(join(dir, 'elsewhere'));
    process.chdir(join(dir, 'elsewhere'));
    process.env.TROUPE_DATA_DIR = rel;
    const cfg = resolveConfig({});
    assert.deepEqual([cfg.apiKey, cfg.source], ['tr_sk_rel', join(data, 'dev-keys.json')]);
  });
});
