import assert from 'node:assert/strict';
import { RepeatedErrors } from '../../src/lib/log/repeated-errors.js';

describe('RepeatedErrors', () => {
  function gate() {
    const lines: { obj: Record<string, unknown>; msg: string }[] = [];
    let t = 1_000;
    const errors = new RepeatedErrors((obj, msg) => lines.push({ obj: obj as Record<string, unknown>, msg }), 'actor worker error', 10_000, () => t);
    return { lines, errors, advance: (ms: number) => (t += ms) };
  }

  it('logs an error once per window however many queues report it, then the count with the next one', () => {
    const { lines, errors, advance } = gate();
    for (let round = 0; round < 5; round++) for (let q = 0; q < 64; q++) errors.report('connect ECONNREFUSED', `session-${q}`);
    assert.deepEqual(lines, [{ obj: { err: 'connect ECONNREFUSED', queue: 'session-0' }, msg: 'actor worker error' }]);
    advance(10_000);
    errors.report('connect ECONNREFUSED', 'session-3');
    assert.equal(lines.length, 2);
    assert.deepEqual(lines[1].obj, { err: 'connect ECONNREFUSED', queue: 'session-3', repeated: 319, repeated_in_queues: 64 });
  });

  it('keeps distinct errors apart', () => {
    const { lines, errors } = gate();
    errors.report('connect ECONNREFUSED', 'session-0');
    errors.report('NOSCRIPT', 'session-0');
    errors.report('connect ECONNREFUSED', 'session-1');
    assert.deepEqual(lines.map((l) => l.obj.err), ['connect ECONNREFUSED', 'NOSCRIPT']);
  });

  it('counts without a source where there is one: the Redis connections of a process', () => {
    const { lines, errors, advance } = gate();
    for (let c = 0; c < 70; c++) errors.report('connect ECONNREFUSED');
    advance(10_000);
    errors.report('connect ECONNREFUSED');
    assert.deepEqual(lines.map((l) => l.obj), [{ err: 'connect ECONNREFUSED' }, { err: 'connect ECONNREFUSED', repeated: 69 }]);
  });
});
