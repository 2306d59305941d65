import assert from 'node:assert/strict';
import { TroupeError } from '../../src/domain/errors.js';
import { idPattern } from '../../src/domain/ids.js';
import { tickIds } from '../../src/domain/schedule.js';
import { checkCron, checkTimezone, nextRunAt } from '../../src/lib/schedules/cron.js';
import { tickTime } from '../../src/lib/queues/job-schedulers.js';

function refusal(fn: () => void): TroupeError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof TroupeError, String(err));
    return err;
  }
  assert.fail('not refused');
}

describe('schedule crons and zones (issue #33 item 3)', () => {
  it('takes 5 fields, or 6 with seconds first, and refuses any other count, naming cron', () => {
    checkCron('*/5 * * * *', 'UTC', 1000);
    checkCron('30 0 9 * * 1-5', 'Europe/Paris', 1000);
    for (const bad of ['* * * *', '* * * * * * *', '@daily', '61 * * * *', '* * 32 * *', 'x y z a b']) {
      const err = refusal(() => checkCron(bad, 'UTC', 1000));
      assert.equal(err.status, 400);
      assert.equal(err.param, 'cron', bad);
    }
  });

  it('refuses a cron that fires closer together than the minimum interval', () => {
    checkCron('* * * * * *', 'UTC', 1000);
    const err = refusal(() => checkCron('* * * * * *', 'UTC', 5000));
    assert.equal(err.param, 'cron');
    assert.match(err.message, /1000 ms apart/);
    // The shortest gap counts, not the first: 0 and 2 seconds past each minute are 2 s apart.
    checkCron('0,2 * * * * *', 'UTC', 2000);
    assert.equal(refusal(() => checkCron('0,2 * * * * *', 'UTC', 3000)).param, 'cron');
  });

  it('knows IANA zones and refuses anything else, naming timezone', () => {
    checkTimezone('UTC');
    checkTimezone('America/Argentina/Buenos_Aires');
    for (const bad of ['Mars/Base', '+01:00', 'UTC; DROP', '']) assert.equal(refusal(() => checkTimezone(bad)).param, 'timezone', bad);
  });

  it('computes the next run in the schedule’s zone', () => {
    const from = new Date('2026-01-15T12:00:00Z');
    assert.equal(nextRunAt('0 9 * * *', 'UTC', from)?.toISOString(), '2026-01-16T09:00:00.000Z');
    assert.equal(nextRunAt('0 9 * * *', 'Asia/Tokyo', from)?.toISOString(), '2026-01-16T00:00:00.000Z');
  });

  it('builds one tick’s ids from the schedule and the tick time alone, shaped like every id', () => {
    const a = tickIds('sch_01jd0000000000000000000000', 1_767_225_600_000);
    assert.deepEqual(a, tickIds('sch_01jd0000000000000000000000', 1_767_225_600_000));
    const b = tickIds('sch_01jd0000000000000000000000', 1_767_225_601_000);
    const c = tickIds('sch_01jd0000000000000000000001', 1_767_225_600_000);
    assert.notEqual(a.session_id, b.session_id);
    assert.notEqual(a.session_id, c.session_id);
    assert.notEqual(a.message_id, c.message_id);
    assert.match(a.session_id, new RegExp(idPattern('session')));
    assert.match(a.message_id, new RegExp(idPattern('message')));
    // Later ticks sort later, as ids made at those times would.
    assert.ok(b.session_id > a.session_id);
  });

  it('reads a tick job’s time from BullMQ’s prevMillis, else from its id', () => {
    assert.equal(tickTime({ id: 'repeat:sch_x:1000', opts: { prevMillis: 2000 } }), 2000);
    assert.equal(tickTime({ id: 'repeat:sch_x:1000', opts: {} }), 1000);
    assert.equal(tickTime({ id: 'other', opts: {} }), null);
  });
});
