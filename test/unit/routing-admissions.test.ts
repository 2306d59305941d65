import assert from 'node:assert/strict';
import { abandon, admitAll, settleAll, started, type Admission, type Admitted } from '../../src/lib/routing/admission.js';

/** An admission that records what happened to what it holds. */
function holding(name: string, log: string[], delayMs = 0): Admission {
  const a: Admitted = { settle: (u) => void log.push(`${name} settled ${u.tokens} ${u.usd}`), release: () => void log.push(`${name} released`) };
  return new Promise((resolve) => setTimeout(() => resolve(a), delayMs));
}

function refusing(status: number, delayMs = 0): Admission {
  return started(new Promise((_, reject) => setTimeout(() => reject(Object.assign(new Error(`refused ${status}`), { status })), delayMs)));
}

describe('routing admissions (src/lib/routing/admission.ts)', () => {
  it('passes each in order and settles every one that holds something with the usage', async () => {
    const log: string[] = [];
    const held = await admitAll([holding('rate', log, 5), Promise.resolve(null), holding('budget', log)]);
    assert.equal(held.length, 2, 'an admission that holds nothing is left out');
    settleAll(held, { tokens: 30, usd: 0.5 });
    assert.deepEqual(log, ['rate settled 30 0.5', 'budget settled 30 0.5']);
  });

  it('answers with the first refusal in list order, not the first to arrive, and gives back what the others hold', async () => {
    const log: string[] = [];
    // The budget (last) resolves before the rate check refuses and before the token check refuses sooner.
    const refusal = await admitAll([holding('a', log), refusing(429, 20), refusing(402, 1), holding('budget', log)]).catch((e: { status: number }) => e.status);
    assert.equal(refusal, 429);
    assert.deepEqual(log.sort(), ['a released', 'budget released']);
  });

  it('a refusal outranks an error found before admission (a bad body); what passed is given back', async () => {
    const log: string[] = [];
    const bad = new Error('bad body');
    await assert.rejects(abandon([holding('budget', log)], bad), (e) => e === bad);
    assert.deepEqual(log, ['budget released']);
    await assert.rejects(abandon([holding('budget', log), refusing(429, 5)], bad), (e: { status?: number }) => e.status === 429);
    assert.deepEqual(log, ['budget released', 'budget released']);
  });
});
