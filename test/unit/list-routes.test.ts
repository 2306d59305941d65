import assert from 'node:assert/strict';
import { allRoutes } from '../../src/edge/api/routes/index.js';
import type { AppDeps } from '../../src/edge/api/deps.js';
import { parsePage, querySchema } from '../../src/edge/api/pagination.js';
import { compile, type JsonSchema } from '../../src/lib/schemas/validator.js';
import { IdPrefix } from '../../src/domain/ids.js';

/** The route modules read their deps only when a handler runs; a proxy that answers every property builds them all. */
function stub(): unknown {
  const fn = () => undefined;
  return new Proxy(fn, { get: (_t, p) => (p === 'then' ? undefined : p === Symbol.iterator ? () => [][Symbol.iterator]() : stub()), apply: () => undefined });
}

const routes = allRoutes(stub() as AppDeps);
const lists = routes.filter((r) => ((r.response?.properties ?? {}) as Record<string, unknown>).next_cursor);

describe('list routes: one declaration documents and parses the page', () => {
  it('finds the list routes', () => assert.ok(lists.length >= 8, `only ${lists.length} routes answer a next_cursor`));

  it('every route that answers a next_cursor declares `list`, and none documents its own limit or after', () => {
    const bad = lists.filter((r) => !r.list || ['limit', 'after'].some((p) => p in ((r.query?.properties ?? {}) as object))).map((r) => `${r.method} ${r.path}`);
    assert.deepEqual(bad, []);
  });

  it("the documented `after` accepts what the parse accepts and refuses what it refuses, for each list's cursor", () => {
    const ids = Object.values(IdPrefix).map((prefix) => `${prefix}_0123456789abcdefghijklmnop`);
    const samples = ['0', '42', '1e3', ...ids, 'agt_short', 'my-router', '-x', 'OPENAI_KEY', 'A'.repeat(129), 'x'.repeat(65), 'x'.repeat(201), ''];
    for (const r of lists) {
      const after = ((querySchema(r)!.properties ?? {}) as Record<string, JsonSchema>).after;
      const documented = compile({ type: 'object', properties: { after } });
      for (const sample of samples) {
        let parsed = true;
        try {
          parsePage({ after: sample }, r.list!.cursor);
        } catch {
          parsed = false;
        }
        assert.equal(documented({ after: sample }), parsed, `${r.method} ${r.path}: after=${JSON.stringify(sample)} documented and parsed differently`);
      }
    }
  });
});
