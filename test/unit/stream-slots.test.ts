import assert from 'node:assert/strict';
import { RateLimitError } from '../../src/domain/errors.js';
import { StreamSlots } from '../../src/edge/api/sse/stream-slots.js';

describe('stream slots', () => {
  it('caps open streams per org across its keys and per key, and a release (once, however often called) frees one', () => {
    const refusals: string[] = [];
    const slots = new StreamSlots(3, 2, (scope) => refusals.push(scope));
    const a1 = slots.acquire('org', 'a');
    slots.acquire('org', 'a');
    assert.throws(() => slots.acquire('org', 'a'), (e: RateLimitError) => e.status === 429 && e.headers?.['Retry-After'] === '5' && /PER_KEY/.test(e.message));
    slots.acquire('org', 'b');
    assert.throws(() => slots.acquire('org', 'c'), (e: RateLimitError) => e.status === 429 && /PER_ORG/.test(e.message));
    assert.doesNotThrow(() => slots.acquire('other-org', 'c'), 'another org has its own slots');
    a1();
    a1();
    slots.acquire('org', 'c');
    assert.throws(() => slots.acquire('org', 'a'), /PER_ORG/, 'a release counts once');
    assert.deepEqual(refusals, ['key', 'org', 'org']);
  });

  it('0 means no cap', () => {
    const slots = new StreamSlots(0, 0);
    for (let i = 0; i < 10_000; i++) slots.acquire('org', 'key');
  });
});
