import assert from 'node:assert/strict';
import { nestsDeeperThan } from '../../src/domain/json-depth.js';

describe('how deep a JSON body nests', () => {
  const nested = (depth: number) => JSON.parse('['.repeat(depth) + ']'.repeat(depth)) as unknown;

  it('counts levels of arrays and objects, a bare one being one level, without recursing', () => {
    for (const v of [1, 'x', null, undefined, true]) assert.equal(nestsDeeperThan(v, 0), false);
    assert.equal(nestsDeeperThan({}, 1), false);
    assert.equal(nestsDeeperThan({}, 0), true);
    assert.equal(nestsDeeperThan({ a: [{ b: 1 }], c: 'x' }, 3), false);
    assert.equal(nestsDeeperThan({ a: [{ b: 1 }], c: 'x' }, 2), true);
    assert.equal(nestsDeeperThan(nested(100), 100), false);
    assert.equal(nestsDeeperThan(nested(101), 100), true);
    // Far deeper than the call stack goes (JSON.stringify throws on it).
    assert.equal(nestsDeeperThan(nested(200_000), 100), true);
  });
});
