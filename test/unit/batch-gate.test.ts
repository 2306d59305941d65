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
    const runs = holds.map((h, i) => gate.run('q', async () => {
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
    await assert.rejects(gate.run('q', () => Promise.reject(new Error('boom'))), /boom/);
    assert.equal(await gate.run('q', async () => 'next'), 'next');
    assert.deepEqual(gate.load, { running: 0, waiting: 0 });
  });

  it('admits the first waiter of a queue at once, beyond the bound, and gives the extra slot back after', async () => {
    const gate = new BatchGate(1);
    const order: string[] = [];
    const holds = { a: held(), b: held(), c: held() };
    const runs = (['a', 'b', 'c'] as const).map((q) => gate.run(q, async () => {
      order.push(q);
      await holds[q].p;
    }));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(order, ['a']);
    assert.deepEqual([...gate.waitingQueues()].sort(), ['b', 'c']);
    assert.equal(gate.admit('c'), true);
    assert.equal(gate.admit('x'), false);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(order, ['a', 'c']);
    assert.deepEqual(gate.load, { running: 2, waiting: 1 });
    holds.a.release();
    await runs[0];
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(order, ['a', 'c'], 'the slot a gave back was the extra one');
    holds.c.release();
    await runs[2];
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(order, ['a', 'c', 'b']);
    holds.b.release();
    await Promise.all(runs);
    assert.deepEqual(gate.load, { running: 0, waiting: 0 });
  });

  it('has no bound with 0 slots', async () => {
    const gate = new BatchGate(0);
    const holds = [held(), held(), held()];
    const runs = holds.map((h) => gate.run('q', () => h.p));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(gate.load, { running: 0, waiting: 0 });
    for (const h of holds) h.release();
    await Promise.all(runs);
  });
});
