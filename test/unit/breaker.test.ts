import assert from 'node:assert/strict';
import { admission, afterFailure, afterSuccess, CLOSED, probeTaken, stateOf, type BreakerPolicy, type BreakerView } from '../../src/domain/breaker.js';

const P: BreakerPolicy = { failures: 3, coolDownMs: 1000 };

function fail(v: BreakerView, times: number, now: number, p = P): BreakerView {
  for (let i = 0; i < times; i++) v = afterFailure(v, now, p);
  return v;
}

describe('circuit breaker state machine', () => {
  it('stays closed below the threshold and opens at it', () => {
    const two = fail(CLOSED, 2, 100);
    assert.equal(stateOf(two, 100), 'closed');
    assert.equal(admission(two, 100, P), 'try');
    const three = afterFailure(two, 150, P);
    assert.equal(stateOf(three, 150), 'open');
    assert.equal(three.openedAt, 150);
    assert.equal(admission(three, 150, P), 'skip');
  });

  it('a success in between resets the count: only consecutive failures open', () => {
    const two = fail(CLOSED, 2, 100);
    // The success comes between the second and third failure: the count starts again.
    const v = fail(afterSuccess(), 2, 200);
    assert.equal(two.failures + v.failures, 4, 'four failures in all');
    assert.equal(stateOf(v, 200), 'closed');
    assert.equal(stateOf(afterFailure(v, 300, P), 300), 'open', 'the third in a row opens');
  });

  it('more failures while open do not push the cool-down back', () => {
    const open = fail(CLOSED, 3, 100);
    const later = fail(open, 5, 900);
    assert.equal(later.openedAt, 100);
    assert.equal(admission(later, 1099, P), 'skip');
    assert.equal(admission(later, 1100, P), 'probe');
  });

  it('admits one probe after the cool-down; others skip while it is out', () => {
    const open = fail(CLOSED, 3, 100);
    const probing = probeTaken(open, 1200, P);
    assert.equal(stateOf(probing, 1200), 'half_open');
    assert.equal(admission(probing, 1201, P), 'skip');
    // A probe whose process died frees the slot after one cool-down.
    assert.equal(admission(probing, 2200, P), 'probe');
  });

  it('a probe that succeeds closes; one that fails reopens with a fresh cool-down', () => {
    const probing = probeTaken(fail(CLOSED, 3, 100), 1200, P);
    assert.deepEqual(afterSuccess(), CLOSED);
    const reopened = afterFailure(probing, 1300, P);
    assert.equal(reopened.openedAt, 1300);
    assert.equal(reopened.probeUntil, 0);
    assert.equal(admission(reopened, 2299, P), 'skip');
    assert.equal(admission(reopened, 2300, P), 'probe');
  });

  it('failures 0 turns the breaker off', () => {
    const off: BreakerPolicy = { failures: 0, coolDownMs: 1000 };
    const v = fail(CLOSED, 50, 100, off);
    assert.equal(v.openedAt, 0);
    assert.equal(admission({ failures: 50, openedAt: 100, probeUntil: 0 }, 101, off), 'try');
  });
});
