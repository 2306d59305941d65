import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { bodyHash, sameBody } from '../../src/store/idempotency.js';

describe('what an idempotency key compares a body by', () => {
  const body = { type: 'user.message', content: [{ type: 'text', text: 'hi' }], metadata: { a: '1', b: '2' } };
  const reordered = JSON.parse('{"metadata":{"b":"2","a":"1"},"content":[{"text":"hi","type":"text"}],"type":"user.message"}');

  it('takes two bodies that differ only in member order as one, and any other difference as another', () => {
    assert.equal(bodyHash(reordered), bodyHash(body));
    assert.ok(sameBody(bodyHash(body), reordered));
    for (const other of [{ ...body, metadata: { a: '1', b: '3' } }, { ...body, content: [...body.content].reverse().concat(body.content) }, { ...body, metadata: null }, { type: 'user.message', content: body.content }]) {
      assert.ok(!sameBody(bodyHash(body), other), JSON.stringify(other));
    }
    // Array order counts; a string that looks like an object is a string.
    assert.notEqual(bodyHash({ x: [1, 2] }), bodyHash({ x: [2, 1] }));
    assert.notEqual(bodyHash({ x: { a: 1 } }), bodyHash({ x: '{"a":1}' }));
    // A member JSON.parse names __proto__ is a member like any other, in a sorted copy too.
    assert.notEqual(bodyHash(JSON.parse('{"b":2,"__proto__":{"x":1}}')), bodyHash(JSON.parse('{"b":2,"__proto__":{"x":2}}')));
  });

  it('still matches a hash stored before member order stopped counting, as it was taken', () => {
    const legacy = createHash('sha256').update(JSON.stringify(body)).digest('hex');
    assert.ok(sameBody(legacy, body));
    assert.ok(!sameBody(legacy, { ...body, metadata: { a: '1', b: '3' } }));
  });
});
