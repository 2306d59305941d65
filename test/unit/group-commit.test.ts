import assert from 'node:assert/strict';
import { GroupCommit, type Pending } from '../../src/store/group-commit.js';

/** A GroupCommit whose flushes are recorded and held until released. */
function recorder(maxInFlight: number, laneAfterMs: number) {
  const flushes: { items: string[]; release(err?: Error): void }[] = [];
  const commits = new GroupCommit<string>(
    (batch: Pending<string>[]) =>
      new Promise<void>((resolve) => {
        flushes.push({
          items: batch.map((p) => p.item),
          release(err?: Error) {
            for (const p of batch) (err ? p.reject(err) : p.resolve());
            resolve();
          },
        });
      }),
    maxInFlight,
    1000,
    laneAfterMs,
  );
  return { commits, flushes };
}

const tick = () => new Promise((r) => setImmediate(r));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('GroupCommit', () => {
  it('flushes a lone write at once', async () => {
    const { commits, flushes } = recorder(4, 1000);
    const done = commits.submit('a');
    await tick();
    assert.deepEqual(flushes.map((f) => f.items), [['a']]);
    flushes[0].release();
    await done;
  });

  it('while a fast flush is out, queues what comes and sends it in one flush when that one ends', async () => {
    const { commits, flushes } = recorder(4, 1000);
    const a = commits.submit('a');
    await tick();
    const rest = ['b', 'c', 'd'].map((x) => commits.submit(x));
    await tick();
    await tick();
    assert.deepEqual(flushes.map((f) => f.items), [['a']], 'no second lane while the first flush is young');
    flushes[0].release();
    await a;
    await tick();
    assert.deepEqual(flushes.map((f) => f.items), [['a'], ['b', 'c', 'd']]);
    flushes[1].release();
    await Promise.all(rest);
  });

  it('opens another lane once the flushes out are slow, up to maxInFlight', async () => {
    const { commits, flushes } = recorder(2, 15);
    const a = commits.submit('a');
    await tick();
    const b = commits.submit('b');
    await tick();
    assert.equal(flushes.length, 1);
    // Bounded: the lane opens after 15 ms; wait up to 2 s for it.
    for (let i = 0; i < 200 && flushes.length < 2; i++) await sleep(10);
    assert.deepEqual(flushes.map((f) => f.items), [['a'], ['b']], 'b went out beside the slow flush');
    const c = commits.submit('c');
    await sleep(60);
    assert.equal(flushes.length, 2, 'no third lane beyond maxInFlight');
    flushes[1].release();
    await b;
    await tick();
    assert.deepEqual(flushes[2].items, ['c']);
    flushes[0].release();
    flushes[2].release();
    await Promise.all([a, c]);
  });

  it('rejects every write of a failed flush, and flushes the next ones after it', async () => {
    const { commits, flushes } = recorder(4, 1000);
    const a = commits.submit('a');
    await tick();
    const b = commits.submit('b');
    await tick();
    flushes[0].release(new Error('store gone'));
    await assert.rejects(a, /store gone/);
    await tick();
    assert.deepEqual(flushes[1].items, ['b']);
    flushes[1].release();
    await b;
  });
});
