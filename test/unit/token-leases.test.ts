import assert from 'node:assert/strict';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { leaseSize, TokenLeases } from '../../src/lib/limits/leases.js';

/**
 * Two TokenLeases are two processes; one rate-limiter-flexible counter (in
 * memory here, Redis in service: the same consume semantics) is what they share.
 */
function shared(limit: number, durationS = 60) {
  const counter = new RateLimiterMemory({ points: limit, duration: durationS });
  let calls = 0;
  const consume = (points: number) => {
    calls++;
    return counter.consume('org', points);
  };
  const take = async (p: TokenLeases) => {
    try {
      await p.take('org', limit, consume);
      return true;
    } catch (e) {
      if (e instanceof RateLimiterRes) return false;
      throw e;
    }
  };
  return { counter, take, calls: () => calls };
}

describe('token leases', () => {
  it('count small limits one by one: exactly the limit is admitted across processes', async () => {
    assert.equal(leaseSize(10), 1);
    const s = shared(10);
    const procs = [new TokenLeases(), new TokenLeases()];
    const admitted: boolean[] = [];
    for (let i = 0; i < 14; i++) admitted.push(await s.take(procs[i % 2]));
    assert.deepEqual(admitted, [...Array(10).fill(true), ...Array(4).fill(false)]);
    assert.equal(s.calls(), 14, 'one counter call per request');
  });

  it('lease blocks for large limits: far fewer counter calls, never more than the limit admitted', async () => {
    const limit = 5000;
    assert.equal(leaseSize(limit), 5);
    const s = shared(limit);
    const procs = [new TokenLeases(), new TokenLeases()];
    let admitted = 0;
    for (let i = 0; i < 4000; i++) if (await s.take(procs[i % 2])) admitted++;
    assert.equal(admitted, 4000);
    assert.ok(s.calls() <= 4000 / 5 + 4, `${s.calls()} counter calls for 4000 requests`);
    for (let i = 0; i < 2000; i++) if (await s.take(procs[i % 2])) admitted++;
    assert.ok(admitted <= limit, `${admitted} admitted`);
    assert.ok(admitted >= limit - 10, `${admitted} admitted: blocks shrink near the limit, so little is left unused`);
  });

  it('reports the count as if every request had been counted on its own', async () => {
    const s = shared(5000);
    const p = new TokenLeases();
    for (let i = 1; i <= 1000; i++) {
      const c = await p.take('org', 5000, (points) => s.counter.consume('org', points));
      assert.equal(c.consumedPoints, i);
      assert.equal(c.remainingPoints, 5000 - i);
      assert.ok(c.msBeforeNext > 0 && c.msBeforeNext <= 60_000);
    }
  });

  it('shares one lease among requests that arrive together', async () => {
    const s = shared(5000);
    const p = new TokenLeases();
    const results = await Promise.all(Array.from({ length: 50 }, () => s.take(p)));
    assert.ok(results.every(Boolean));
    assert.ok(s.calls() < 50, `${s.calls()} counter calls for 50 concurrent requests`);
  });

  it('lets unspent tokens lapse with their window', async () => {
    const s = shared(5000, 1);
    const p = new TokenLeases();
    assert.ok(await s.take(p));
    assert.equal(s.calls(), 1);
    await new Promise((r) => setTimeout(r, 1100));
    assert.ok(await s.take(p));
    assert.equal(s.calls(), 2, 'a new window needs a new lease');
    assert.equal((await s.counter.get('org'))!.consumedPoints, 5, 'the new window counts only its own block');
  });

  it('serves a held token without waiting, and only then: none before the first block, none for exact counts', async () => {
    const s = shared(5000);
    const consume = (points: number) => s.counter.consume('org', points);
    const p = new TokenLeases();
    assert.equal(p.takeNow('org', 5000, consume), null, 'no block held yet');
    await p.take('org', 5000, consume);
    const now = p.takeNow('org', 5000, consume);
    assert.deepEqual(now && [now.consumedPoints, now.remainingPoints], [2, 4998]);
    assert.equal(p.takeNow('org', 10, consume), null, 'a limit below 2,000 is counted on the shared counter every time');
    for (let i = 0; i < 50 && p.takeNow('org', 5000, consume); i++);
    assert.equal(p.takeNow('org', 5000, consume), null, 'a spent block (its next one still on its way) gives no token here');
  });
});
