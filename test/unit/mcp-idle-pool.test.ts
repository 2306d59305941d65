import assert from 'node:assert/strict';
import { IdlePool } from '../../src/lib/mcp/idle-pool.js';

describe('IdlePool (pooled MCP sessions)', () => {
  function pool(max: number, idleMs = 60_000) {
    const evicted: string[] = [];
    return { evicted, pool: new IdlePool<string>({ max, idleMs, evict: (s) => void evicted.push(s) }) };
  }

  it('hands out only what was given under the same key, most recent first, and each item once', () => {
    const { pool: p } = pool(8);
    p.give('org-a', 'a1');
    p.give('org-b', 'b1');
    p.give('org-a', 'a2');
    assert.equal(p.take('org-c'), undefined);
    assert.equal(p.take('org-a'), 'a2');
    assert.equal(p.take('org-a'), 'a1');
    assert.equal(p.take('org-a'), undefined);
    assert.equal(p.take('org-b'), 'b1');
    assert.equal(p.size, 0);
  });

  it('evicts the least recently released past max, and everything when max is 0', () => {
    const { pool: p, evicted } = pool(2);
    p.give('k1', 'one');
    p.give('k2', 'two');
    assert.equal(p.take('k1'), 'one');
    p.give('k1', 'one');
    p.give('k3', 'three');
    assert.deepEqual(evicted, ['two']);
    assert.equal(p.size, 2);
    const off = pool(0);
    off.pool.give('k', 'x');
    assert.deepEqual(off.evicted, ['x']);
    assert.equal(off.pool.size, 0);
  });

  it('evicts an item idle past idleMs, but not one taken before', async () => {
    const { pool: p, evicted } = pool(8, 30);
    p.give('k', 'idle');
    p.give('j', 'used');
    assert.equal(p.take('j'), 'used');
    await new Promise((r) => setTimeout(r, 80));
    assert.deepEqual(evicted, ['idle']);
    assert.equal(p.size, 0);
  });

  it('drain evicts everything idle and whatever is given back later', () => {
    const { pool: p, evicted } = pool(8);
    p.give('k', 'a');
    p.give('k', 'b');
    p.drain();
    assert.deepEqual(evicted, ['a', 'b']);
    p.give('k', 'late');
    assert.deepEqual(evicted, ['a', 'b', 'late']);
    assert.equal(p.take('k'), undefined);
  });
});
