import assert from 'node:assert/strict';
import { Membership } from '../../actors/runtime/membership.js';
import { startHarness, uniqueName, type Harness } from '../support/harness.js';
import { until } from '../support/wait.js';

const quiet = { info: () => undefined, warn: () => undefined };

/**
 * The worker membership on the real Redis: whether a member takes part is its own `fit` (the one statement of it, from
 * the composition root), and an unfit member steps out so that the others see the set without it, then comes back.
 */
describe('worker membership: an unfit member steps out and comes back', function () {
  this.timeout(30_000);
  let h: Harness;
  const members: Membership[] = [];

  before(async () => {
    h = await startHarness({ roles: ['web'] });
  });
  after(async () => {
    await Promise.all(members.map((m) => m.leave()));
    await h?.close();
  });

  it('leaves the set while fit says no and rejoins on the first beat it says yes', async () => {
    const redis = h.running.core.plane.queues.producer;
    const key = uniqueName('members');
    let fit = true;
    // Sorted here: Redis lists the members by their last stamp.
    const seenBy = new Map<string, string[]>();
    const join = (m: Membership) => m.join((list) => seenBy.set(m.id, [...list].sort()));
    const a = new Membership({ redis, key, log: quiet, heartbeatMs: 50, lapseMs: 2_000, fit: () => fit });
    const b = new Membership({ redis, key, log: quiet, heartbeatMs: 50, lapseMs: 2_000 });
    members.push(a, b);
    await Promise.all([join(a), join(b)]);
    const both = [a.id, b.id].sort();
    await until(async () => JSON.stringify(seenBy.get(b.id)) === JSON.stringify(both) || null, 5_000);

    fit = false;
    // Well inside the lapse: b sees a gone because a stepped out, not because its stamp aged.
    await until(async () => JSON.stringify(seenBy.get(b.id)) === JSON.stringify([b.id]) || null, 1_000);
    assert.deepEqual(seenBy.get(a.id), [b.id], 'the unfit member sees the set without itself');
    assert.equal(await redis.zscore(key, a.id), null);

    fit = true;
    await until(async () => JSON.stringify(seenBy.get(b.id)) === JSON.stringify(both) || null, 1_000);
    assert.deepEqual(seenBy.get(a.id), both);
  });
});
