import assert from 'node:assert/strict';
import { ExpiringCache } from '../../src/domain/expiring-cache.js';

describe('ExpiringCache', () => {
  it('returns a value until its time is up, then nothing', () => {
    const cache = new ExpiringCache<string | null>(1000, 10);
    cache.set('k', null, 0);
    assert.equal(cache.get('k', 999), null, 'a cached miss is a value');
    assert.equal(cache.get('k', 1000), undefined);
    assert.equal(cache.get('other', 0), undefined);
  });

  it('starts over when full instead of growing', () => {
    const cache = new ExpiringCache<number>(1000, 2);
    cache.set('a', 1, 0);
    cache.set('b', 2, 0);
    cache.set('c', 3, 0);
    assert.deepEqual([cache.get('a', 1), cache.get('b', 1), cache.get('c', 1)], [undefined, undefined, 3]);
  });
});
