import assert from 'node:assert/strict';
import { EPISODE_QUIET_MS, REMINDER_MS, ResumeLog } from '../../actors/session/resume-log.js';

describe('ResumeLog (when the sweeper says it resumed sessions)', () => {
  it('says a partition’s stranded sessions once, not once per sweep, and counts the repeats in a reminder a minute later', () => {
    const log = new ResumeLog();
    let t = 0;
    const lines = [];
    // A minute and a half of 1 s sweeps resuming the same two sessions (the partitioned worker holds their hand-offs).
    for (let sweep = 0; sweep < 90; sweep++, t += 1000) lines.push(log.note(['s1', 's2'], t));
    const said = lines.filter((l) => l !== null);
    assert.deepEqual(said[0], { sessions: 2, new: 2, sample: ['s1', 's2'], repeated_sweeps: 0 });
    assert.equal(said.length, 2, 'the first sweep, and one reminder after REMINDER_MS');
    assert.equal(lines.indexOf(said[1]), REMINDER_MS / 1000);
    assert.deepEqual(said[1], { sessions: 2, new: 0, sample: ['s1', 's2'], repeated_sweeps: REMINDER_MS / 1000 - 1 });
  });

  it('says a newly stranded session at once, naming only the new ones', () => {
    const log = new ResumeLog();
    assert.ok(log.note(['s1'], 0));
    assert.equal(log.note(['s1'], 1000), null);
    assert.deepEqual(log.note(['s1', 's3'], 2000), { sessions: 2, new: 1, sample: ['s3'], repeated_sweeps: 1 });
    assert.equal(log.note(['s3', 's1'], 3000), null);
  });

  it('says nothing for a sweep that resumed nothing, and starts a new episode for a session quiet for EPISODE_QUIET_MS', () => {
    const log = new ResumeLog();
    assert.ok(log.note(['s1'], 0));
    assert.equal(log.note([], 1000), null);
    assert.equal(log.note(['s1'], EPISODE_QUIET_MS - 1), null, 'still the same episode');
    assert.deepEqual(log.note(['s1'], 2 * EPISODE_QUIET_MS - 1), { sessions: 1, new: 1, sample: ['s1'], repeated_sweeps: 1 }, 'a new one after a quiet minute');
  });

  it('starts a new episode when Redis restarted: everything it resumes then is said', () => {
    const log = new ResumeLog();
    assert.ok(log.note(['s1', 's2'], 0));
    assert.deepEqual(log.note(['s1', 's2'], 1000, true), { sessions: 2, new: 2, sample: ['s1', 's2'], repeated_sweeps: 0 });
  });
});
