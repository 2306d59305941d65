import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../../..');

/** README.md and docs/*.md: what a clone's reader has. */
function docs(): string[] {
  return ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => join('docs', f))];
}

/**
 * The docs are read in a clone: every relative link must name a file inside the repository, and nothing may
 * send the reader to the workspace the project was written in (`../shared/…`, the spec and design there).
 */
describe('links in README.md and docs/', () => {
  for (const file of docs()) {
    it(`${file}: every relative link names a file of the repository`, () => {
      const text = readFileSync(join(ROOT, file), 'utf8');
      const broken: string[] = [];
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        if (/^[a-z]+:/i.test(target) || target.startsWith('#')) continue;
        const path = decodeURIComponent(target.split('#')[0]);
        const abs = path.startsWith('/') ? path : resolve(dirname(join(ROOT, file)), path);
        if (relative(ROOT, abs).startsWith('..') || path.startsWith('/') || !existsSync(abs)) broken.push(target);
      }
      assert.deepEqual(broken, [], `links that leave the repository or name no file in ${file}`);
      assert.doesNotMatch(text, /\.\.\/shared\//, `${file} points at ../shared/, which a clone does not have`);
    });
  }
});
