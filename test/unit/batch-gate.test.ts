import assert from 'node:assert/strict';
import { BatchGate } from '../../actors/runtime/batch-gate.js';

describe('BatchGate', () => {
  const held = () => {
    let release!: () => void;
    const p = new Promise<void>((r) => (release = r));
    return { p, release };
  };

  it('runs at most `slots` at once and serves waiters in arrival order', async () => {
    const gate = new BatchGate(2);
    const order: number[] = [];
    const holds = [held(), held(), held(), held()];
    const runs = holds.map((h, i) => gate.run(async () => {
      order.push(i);
      await h.p;
      return i;
    }));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(order, [0, 1]);
    assert.deepEqual(gate.load, { running: 2, waiting: 2 });
    holds[1].release();
    await runs[1];
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(order, [0, 1, 2]);
    holds[0].release();
    holds[2].release();
    holds[3].release();
    assert.deepEqual(await Promise.all(runs), [0, 1, 2, 3]);
    assert.deepEqual(order, [0, 1, 2, 3]);
    assert.deepEqual(gate.load, { running: 0, waiting: 0 });
  });

  it('frees the slot when the work fails', async () => {
    const gate = new BatchGate(1);
    await assert.rejects(gate.run(() => Promise.reject(new Error('boom'))), /boom/);
    assert.equal(await gate.run(async () => 'next'), 'next');
    assert.deepEqual(gate.load, { running: 0, waiting: 0 });
  });

  it('has no bound with 0 slots', async () => {
    const gate = new BatchGate(0);
    const holds = [held(), held(), held()];
    const runs = holds.map((h) => gate.run(() => h.p));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(gate.load, { running: 0, waiting: 0 });
    for (const h of holds) h.release();
    await Promise.all(runs);
  });
});
