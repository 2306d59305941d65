import assert from 'node:assert/strict';
import { within } from '../../src/domain/deadline.js';

describe('within: a promise against a deadline', () => {
  it('gives the promise’s value, or its rejection, when it settles first', async () => {
    assert.equal(await within(Promise.resolve(7), 1000, () => 'late'), 7);
    await assert.rejects(within(Promise.reject(new Error('refused')), 1000, () => 'late'), /refused/);
  });

  it('gives late()’s value when the deadline comes first, and rejects when late() throws', async () => {
    const never = new Promise<number>(() => undefined);
    assert.equal(await within(never, 10, () => 'late'), 'late');
    await assert.rejects(
      within(never, 10, () => {
        throw new Error('took too long');
      }),
      /took too long/,
    );
  });

  it('calls late() only when the deadline won', async () => {
    let called = 0;
    await within(Promise.resolve(1), 10, () => called++);
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(called, 0);
  });
});
