import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { SEALED_FIELDS } from '../../src/admin/reseal.js';

const ROOT = resolve(__dirname, '../../..');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/**
 * `troupe-admin reseal` re-encrypts the fields SEALED_FIELDS lists. A new
 * place that seals a value must be added there, or that value would keep an
 * old key alive (and break once the key is removed): this names the files
 * that seal, so a new one fails here until it is looked at.
 */
describe('troupe-admin reseal knows every sealed value', () => {
  it('every file that seals is one whose fields SEALED_FIELDS lists', () => {
    const sealing = ['src', 'actors', 'infra'].flatMap((d) => sources(join(ROOT, d))).filter((f) => /\.seal\(/.test(readFileSync(f, 'utf8'))).map((f) => relative(ROOT, f)).sort();
    assert.deepEqual(sealing, ['src/admin/reseal.ts', 'src/app/sessions/create-session.ts', 'src/store/credentials.ts', 'src/store/webhook-configs.ts']);
    assert.deepEqual([...new Set(SEALED_FIELDS.map((f) => f.collection))].sort(), ['credentials', 'sessions', 'webhook_configs']);
  });
});
