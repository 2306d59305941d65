import assert from 'node:assert/strict';
import { firstOf, pairsReport, summarise, t975 } from '../../bench/ledger/pairs.js';

describe('scale-out pairs (bench/ledger/pairs.ts)', () => {
  it('swaps which setting runs first every pair', () => {
    assert.deepEqual([0, 1, 2, 3].map(firstOf), [2, 1, 2, 1]);
  });

  it('gives the mean paired difference with a Student-t 95% interval', () => {
    // Differences +10%, −10%, +0%: mean 0, sd 10, half-width t(2) · 10 / √3.
    const s = summarise([
      { one: 1000, two: 1100, first: 2 },
      { one: 2000, two: 1800, first: 1 },
      { one: 3000, two: 3000, first: 2 },
    ]);
    assert.equal(s.n, 3);
    assert.ok(Math.abs(s.meanDiffPct) < 1e-9);
    assert.ok(Math.abs(s.halfWidthPct - (4.303 * 10) / Math.sqrt(3)) < 1e-9);
    assert.equal(s.meanOne, 2000);
    assert.equal(s.meanTwo, 1966.6666666666667);
    assert.equal(s.twoAtLeastOne, 2);
  });

  it('falls back to the normal quantile past 30 degrees of freedom', () => {
    assert.equal(t975(1), 12.706);
    assert.equal(t975(30), 2.042);
    assert.equal(t975(31), 1.96);
  });

  it('reports one pair without an interval rather than a NaN', () => {
    const text = pairsReport([{ one: 3000, two: 2850, first: 1 }]);
    assert.match(text, /1 worker 3000, 2 workers 2850 events\/s \(−5\.0%\)/);
    assert.match(text, /no interval from one pair/);
    assert.doesNotMatch(text, /NaN/);
  });
});
