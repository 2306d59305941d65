import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { SecretBox } from '../../src/lib/crypto/secret-box.js';
import { bodyHash, sameBody } from '../../src/store/idempotency.js';

describe('what an idempotency key compares a body by', () => {
  const k1 = randomBytes(32);
  const box = new SecretBox(new Map([['k1', k1]]), 'k1');
  const body = { type: 'user.message', content: [{ type: 'text', text: 'hi' }], metadata: { a: '1', b: '2' } };
  const reordered = JSON.parse('{"metadata":{"b":"2","a":"1"},"content":[{"text":"hi","type":"text"}],"type":"user.message"}');
  const hash = (b: unknown) => bodyHash(b, box);
  const same = (stored: string, b: unknown) => sameBody(stored, b, box);
  const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

  it('takes two bodies that differ only in member order as one, and any other difference as another', () => {
    assert.equal(hash(reordered), hash(body));
    assert.ok(same(hash(body), reordered));
    for (const other of [{ ...body, metadata: { a: '1', b: '3' } }, { ...body, content: [...body.content].reverse().concat(body.content) }, { ...body, metadata: null }, { type: 'user.message', content: body.content }]) {
      assert.ok(!same(hash(body), other), JSON.stringify(other));
    }
    // Array order counts; a string that looks like an object is a string.
    assert.notEqual(hash({ x: [1, 2] }), hash({ x: [2, 1] }));
    assert.notEqual(hash({ x: { a: 1 } }), hash({ x: '{"a":1}' }));
    // A member JSON.parse names __proto__ is a member like any other, in a sorted copy too.
    assert.notEqual(hash(JSON.parse('{"b":2,"__proto__":{"x":1}}')), hash(JSON.parse('{"b":2,"__proto__":{"x":2}}')));
  });

  it('is keyed by the master key, so a stored hash cannot be checked against guesses of a secret without it', () => {
    const withSecret = { type: 'user.message', content: [{ type: 'text', text: 'hi' }], secrets: { DB_PASSWORD: 'hunter2' } };
    const stored = hash(withSecret);
    assert.match(stored, /^h1:k1:[0-9a-f]{64}$/);
    // Not the plain SHA-256 of the body in either text a guesser would try.
    for (const text of [JSON.stringify(withSecret), JSON.stringify({ content: withSecret.content, secrets: withSecret.secrets, type: withSecret.type })]) {
      assert.ok(!stored.includes(sha256(text)));
    }
    const otherKey = new SecretBox(new Map([['k1', randomBytes(32)]]), 'k1');
    assert.notEqual(bodyHash(withSecret, otherKey), stored);
    assert.ok(!sameBody(stored, withSecret, otherKey));
    // A forged or cut value is a different body, not an error.
    assert.ok(!same(stored.slice(0, -2), withSecret));
    assert.ok(!same('h1:nokey:' + stored.slice(6), withSecret));
    assert.ok(!same('h1:', withSecret));
  });

  it('still matches after the master key rotates, while the old key is listed, and not after it is removed', () => {
    const stored = hash(body);
    const rotated = new SecretBox(new Map([['k1', k1], ['k2', randomBytes(32)]]), 'k2');
    assert.ok(sameBody(stored, reordered, rotated));
    assert.match(bodyHash(body, rotated), /^h1:k2:/);
    const removed = new SecretBox(new Map([['k2', randomBytes(32)]]), 'k2');
    assert.ok(!sameBody(stored, body, removed));
  });

  it('still matches hashes stored before they were keyed or before member order stopped counting, as they were taken', () => {
    const legacy = sha256(JSON.stringify(body));
    assert.ok(same(legacy, body));
    assert.ok(!same(legacy, { ...body, metadata: { a: '1', b: '3' } }));
    const canonical = 'c1:' + sha256(JSON.stringify({ content: [{ text: 'hi', type: 'text' }], metadata: { a: '1', b: '2' }, type: 'user.message' }));
    assert.ok(same(canonical, reordered));
    assert.ok(!same(canonical, { ...body, metadata: null }));
  });
});
