import assert from 'node:assert/strict';
import { batchItemCheck, type BatchItemInput } from '../../src/app/batches/plan.js';
import { TroupeError } from '../../src/domain/errors.js';

/**
 * A batch's items are checked one by one, but the files they name are read once for the whole batch: 10,000
 * items naming files must not cost 10,000 reads before the POST is answered.
 */
describe('batch items: the files they name are read in one query', () => {
  const item = (fileId: string) => ({ agent_id: 'agt_1', message: { content: [{ type: 'text', text: 'hi' }, { type: 'file', file_id: fileId }] } });
  const present = new Set(['file_a', 'file_b']);

  function countingFiles() {
    const calls: string[][] = [];
    return {
      calls,
      files: {
        async missing(_org: string, ids: readonly string[]) {
          calls.push([...ids]);
          return [...new Set(ids)].filter((id) => !present.has(id));
        },
      },
    };
  }

  it('makes one read for 500 items, and fails each item that names a missing file with its own field', async () => {
    const raws = Array.from({ length: 500 }, (_, i) => item(['file_a', 'file_b', 'file_gone'][i % 3]));
    const { calls, files } = countingFiles();
    const check = batchItemCheck(files, 'org_1', (raw) => raw as BatchItemInput, raws);
    const outcomes = await Promise.all(raws.map((raw, i) => Promise.resolve(check(raw, i)).then(() => 'ok', (err: unknown) => err)));
    assert.equal(calls.length, 1, 'one read for the batch');
    assert.deepEqual(calls[0].sort(), ['file_a', 'file_b', 'file_gone']);
    assert.equal(outcomes.filter((o) => o === 'ok').length, 334);
    const failed = outcomes[2];
    assert.ok(failed instanceof TroupeError);
    assert.equal(failed.status, 404);
    assert.equal(failed.param, 'items[2].message.content[1].file_id');
  });

  it('reads an id the batch did not name on its own', async () => {
    const { calls, files } = countingFiles();
    const check = batchItemCheck(files, 'org_1', (raw) => raw as BatchItemInput, [item('file_a')]);
    await check(item('file_b'), 0);
    assert.deepEqual(calls, [['file_b']]);
  });
});
