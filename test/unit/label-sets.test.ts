import assert from 'node:assert/strict';
import { LabelSets } from '../../src/lib/metrics/label-sets.js';

describe('metric label sets', () => {
  it('hands out one object per combination of values, with the labels named in order', () => {
    const sets = new LabelSets<{ method: string; route: string; status: string }>(['method', 'route', 'status']);
    const a = sets.of('POST', '/v1/chat/completions', '200');
    assert.deepEqual(a, { method: 'POST', route: '/v1/chat/completions', status: '200' });
    assert.equal(sets.of('POST', '/v1/chat/completions', '200'), a, 'the same values give the same object');
    assert.notEqual(sets.of('POST', '/v1/chat/completions', '429'), a);
    assert.deepEqual(sets.of('GET', '/v1/chat/completions', '200'), { method: 'GET', route: '/v1/chat/completions', status: '200' });
    assert.deepEqual(new LabelSets<{ model: string }>(['model']).of('m'), { model: 'm' });
  });

  it('starts over when it holds too many sets, and still answers right', () => {
    const sets = new LabelSets<{ model: string; reason: string }>(['model', 'reason']);
    const first = sets.of('m0', 'first');
    for (let i = 1; i <= 10_001; i++) assert.deepEqual(sets.of(`m${i}`, 'first'), { model: `m${i}`, reason: 'first' });
    const again = sets.of('m0', 'first');
    assert.deepEqual(again, first);
    assert.notEqual(again, first, 'the cache was cleared along the way');
    assert.equal(sets.of('m0', 'first'), again);
  });
});
