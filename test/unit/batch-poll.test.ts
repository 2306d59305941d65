import assert from 'node:assert/strict';
import { batchPollDelay } from '../../clients/typescript/src/client.js';

describe("batches.wait's poll delay", () => {
  it('polls every pollMs at first, then a tenth of the time waited, up to maxPollMs', () => {
    assert.equal(batchPollDelay(0), 1000);
    assert.equal(batchPollDelay(9_000), 1000);
    assert.equal(batchPollDelay(30_000), 3000);
    assert.equal(batchPollDelay(150_000), 15_000);
    assert.equal(batchPollDelay(3_600_000), 15_000);
    assert.equal(batchPollDelay(60_000, 200, 2000), 2000);
    assert.equal(batchPollDelay(0, 50), 50);
  });

  it('reads a ten-minute batch some 60 times instead of 600', () => {
    let t = 0;
    let reads = 0;
    while (t < 600_000) {
      reads++;
      t += batchPollDelay(t);
    }
    assert.ok(reads > 40 && reads < 80, `${reads} reads`);
  });

  it('never waits less than pollMs, even when maxPollMs is set below it', () => {
    assert.equal(batchPollDelay(1_000_000, 5000, 1000), 5000);
  });
});
