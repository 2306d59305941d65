import assert from 'node:assert/strict';
import { newId } from '../../src/domain/ids.js';

describe('newId', () => {
  it('is a prefixed lower-case ULID, strictly increasing and unique across refills of the random pool', () => {
    // 10,000 ids draw far more than one 4 KiB pool of random bytes.
    const ids = Array.from({ length: 10_000 }, () => newId('message'));
    for (const id of ids) assert.match(id, /^msg_[0-9a-hjkmnp-tv-z]{26}$/);
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], `${ids[i]} after ${ids[i - 1]}`);
    assert.equal(new Set(ids).size, ids.length);
  });

  it('spreads the random part over the whole Crockford alphabet', () => {
    const seen = new Set<string>();
    // Ids made in different milliseconds get fresh randomness (within one, ulid increments the last).
    const started = Date.now();
    while (seen.size < 32 && Date.now() - started < 2000) for (const c of newId('session').slice(14)) seen.add(c);
    assert.equal(seen.size, 32, [...seen].sort().join(''));
  });
});
