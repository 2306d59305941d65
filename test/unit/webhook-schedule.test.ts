import assert from 'node:assert/strict';
import { ConfigError, DEFAULT_WEBHOOK_RETRY_SCHEDULE, parseRetrySchedule } from '../../src/lib/config/config.js';
import { MAX_RETRY_AFTER_MS, retryDelayMs } from '../../actors/webhook/schedule.js';
import { parseRetryAfter } from '../../src/lib/net/retry-after.js';

describe('webhook retry schedule', () => {
  it('retries for at least 24 h by default, even with the least jitter, and backs off', () => {
    const least = DEFAULT_WEBHOOK_RETRY_SCHEDULE.map((_, i) => retryDelayMs(i, DEFAULT_WEBHOOK_RETRY_SCHEDULE, null, () => 0)!);
    assert.ok(least.reduce((a, b) => a + b, 0) >= 24 * 3600 * 1000);
    for (let i = 1; i < least.length; i++) assert.ok(least[i] > least[i - 1], 'each wait longer than the one before');
    assert.equal(retryDelayMs(DEFAULT_WEBHOOK_RETRY_SCHEDULE.length, DEFAULT_WEBHOOK_RETRY_SCHEDULE, null), null, 'exhausted after the last entry');
  });

  it('adds up to 20 % jitter, never less than scheduled', () => {
    assert.equal(retryDelayMs(0, [10], null, () => 0), 10_000);
    assert.equal(retryDelayMs(0, [10], null, () => 0.999999), 12_000);
    const seen = new Set(Array.from({ length: 20 }, () => retryDelayMs(0, [10], null)));
    assert.ok(seen.size > 1, 'jitter varies');
  });

  it('waits at least as long as Retry-After asks, up to a day', () => {
    assert.equal(retryDelayMs(0, [1], 5000, () => 0), 5000);
    assert.equal(retryDelayMs(0, [10], 5000, () => 0), 10_000, 'a shorter Retry-After does not hurry the schedule');
    assert.equal(retryDelayMs(0, [1], 30 * 24 * 3600 * 1000, () => 0), MAX_RETRY_AFTER_MS);
  });

  it('parses Retry-After as seconds or an HTTP date', () => {
    assert.equal(parseRetryAfter('3'), 3000);
    const now = Date.parse('2025-01-01T00:00:00Z');
    assert.equal(parseRetryAfter('Wed, 01 Jan 2025 00:00:10 GMT', now), 10_000);
    assert.equal(parseRetryAfter(undefined), null);
    assert.equal(parseRetryAfter('soon'), null);
  });

  it('reads TROUPE_WEBHOOK_RETRY_SCHEDULE and refuses bad values', () => {
    assert.deepEqual(parseRetrySchedule('1, 2,0.5', false), [1, 2, 0.5]);
    assert.equal(parseRetrySchedule('', false), DEFAULT_WEBHOOK_RETRY_SCHEDULE);
    for (const bad of ['1,,2', 'a', '0', '-1', '700000']) assert.throws(() => parseRetrySchedule(bad, false), ConfigError, bad);
    assert.throws(() => parseRetrySchedule('1,1,1', true), /at least 24 h/);
    assert.deepEqual(parseRetrySchedule('86400', true), [86400]);
  });
});
