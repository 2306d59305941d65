import assert from 'node:assert/strict';
import { retryDuplicateUpsert } from '../../src/store/duplicate-key.js';

describe('an upsert that lost the first-insert race', () => {
  const duplicate = Object.assign(new Error('E11000 duplicate key error'), { code: 11000 });

  it('runs once more after a duplicate key, and returns what the second try found', async () => {
    let calls = 0;
    const result = await retryDuplicateUpsert(async () => {
      calls++;
      if (calls === 1) throw duplicate;
      return 'updated';
    });
    assert.equal(result, 'updated');
    assert.equal(calls, 2);
  });

  it('runs only once more: a second duplicate key is the caller\u2019s', async () => {
    let calls = 0;
    await assert.rejects(
      retryDuplicateUpsert(async () => {
        calls++;
        throw duplicate;
      }),
      /E11000/,
    );
    assert.equal(calls, 2);
  });

  it('never repeats a write that failed for another reason', async () => {
    let calls = 0;
    await assert.rejects(
      retryDuplicateUpsert(async () => {
        calls++;
        throw Object.assign(new Error('not primary'), { code: 10107 });
      }),
      /not primary/,
    );
    assert.equal(calls, 1);
  });
});
