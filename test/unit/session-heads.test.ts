import assert from 'node:assert/strict';
import { SessionHeads } from '../../src/app/sessions/session-heads.js';

describe('session heads (a web process skips reading a session it knows)', () => {
  it('gives a known session only to its own org, and keeps nothing mutable', () => {
    const heads = new SessionHeads();
    assert.equal(heads.get('org_a', 'session_1'), null);
    heads.remember({ _id: 'session_1', org_id: 'org_a', priority: 'batch', status: 'running' } as never);
    assert.deepEqual(heads.get('org_a', 'session_1'), { _id: 'session_1', org_id: 'org_a', priority: 'batch' });
    assert.equal(heads.get('org_b', 'session_1'), null, 'another org never gets it');
    heads.remember({ _id: 'session_2', org_id: 'org_a' } as never);
    assert.equal(heads.get('org_a', 'session_2')?.priority, 'interactive', 'documents written before priorities were interactive');
  });
});
