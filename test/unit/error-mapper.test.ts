import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { ErrorType } from '../../src/domain/errors.js';
import { errorMapper } from '../../src/edge/api/middleware/errors.js';
import type { AppState } from '../../src/edge/api/types.js';

/** A Koa app on loopback whose one handler throws `err`; returns the status, Retry-After and body. */
async function answerTo(err: unknown): Promise<{ status: number; retryAfter: string | null; body: { error: { type: string; code: string; message: string } } }> {
  const app = new Koa<AppState>();
  app.use(errorMapper());
  app.use(() => {
    throw err;
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as never };
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}

function named(name: string, message: string): Error {
  const e = new Error(message);
  e.name = name;
  return e;
}

describe('error mapper: an unreachable store', () => {
  for (const err of [
    named('MongoServerSelectionError', 'connect ECONNREFUSED 127.0.0.1:27017'),
    named('MongoNetworkError', 'connection 24 to 127.0.0.1:27017 closed'),
    named('MaxRetriesPerRequestError', 'Reached the max retries per request limit'),
    new Error('Connection is closed.'),
    new Error('Command timed out'),
    Object.assign(new Error('This socket has been ended by the other party'), { code: 'EPIPE' }),
  ]) {
    it(`answers ${err.name} "${err.message}" with a 503 to retry, not a 500`, async () => {
      const r = await answerTo(err);
      assert.equal(r.status, 503);
      assert.equal(r.retryAfter, '1');
      assert.deepEqual([r.body.error.type, r.body.error.code], ['service_unavailable', 'store_unavailable']);
      assert.ok(!r.body.error.message.includes('127.0.0.1'), 'no internal detail reaches the client');
    });
  }

  it('still answers any other failure with a 500 that names only the request', async () => {
    const r = await answerTo(named('TypeError', 'x is undefined'));
    assert.equal(r.status, 500);
    assert.equal(r.body.error.code, 'internal_error');
    assert.equal(r.retryAfter, null);
  });
});

describe('error types: one table, as documented', () => {
  it("README's Errors section names every family in ErrorType, each once, and no other", () => {
    const readme = readFileSync(join(__dirname, '../../../README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('\n## Errors'), readme.indexOf('\n## ', readme.indexOf('\n## Errors') + 1));
    const listed = [...section.matchAll(/`([a-z_]+)`\s\(\d{3}/g)].map((m) => m[1]);
    assert.deepEqual([...listed].sort(), [...new Set(Object.values(ErrorType))].sort());
  });
});
