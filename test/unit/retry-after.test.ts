import assert from 'node:assert/strict';
import { parseRetryAfter } from '../../src/lib/net/retry-after.js';

/** The one reader of Retry-After, for upstream model answers (src/lib/llm/client.ts) and webhook receivers (actors/webhook/send.ts). */
describe('parseRetryAfter', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');

  it('reads delay-seconds, a fraction included, as milliseconds', () => {
    assert.equal(parseRetryAfter('3'), 3000);
    assert.equal(parseRetryAfter(' 120 '), 120_000);
    assert.equal(parseRetryAfter('0'), 0);
    // Some model providers send fractions; a bare number must never be read as a date (Date.parse('1.5') is a year).
    assert.equal(parseRetryAfter('1.5'), 1500);
    assert.equal(parseRetryAfter('0.0004'), 0);
  });

  it('reads an HTTP date as the time until it, and a past one as no wait', () => {
    assert.equal(parseRetryAfter('Wed, 01 Jan 2025 00:00:10 GMT', now), 10_000);
    assert.equal(parseRetryAfter('Tue, 31 Dec 2024 23:59:00 GMT', now), 0);
  });

  it('takes the first of repeated headers', () => {
    assert.equal(parseRetryAfter(['2', '9'], now), 2000);
  });

  it('is null when absent, empty or unreadable', () => {
    for (const v of [undefined, '', '   ', 'soon', '1e3', '5s', []]) assert.equal(parseRetryAfter(v as string | string[] | undefined, now), null, JSON.stringify(v));
  });
});
