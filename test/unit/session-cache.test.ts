import assert from 'node:assert/strict';
import { SessionCache } from '../../actors/session/session-cache.js';
import { emptySessionState } from '../../src/domain/session/projection.js';
import type { SessionDoc } from '../../src/domain/views/session.js';

const doc = (id: string, agentId: string) => ({ _id: id, org_id: 'o', agent_id: agentId, status: 'idle', queued_message_ids: [], running_message_id: null }) as unknown as SessionDoc;

describe('session cache: an agent deleted while copies of its sessions are held', () => {
  it('stamps the held copies of that agent’s sessions, and only those', () => {
    const cache = new SessionCache();
    cache.remember(doc('s1', 'a1'), emptySessionState('s1'), new Map());
    cache.remember(doc('s2', 'a2'), emptySessionState('s2'), new Map());
    const at = new Date('2026-11-25T05:00:00Z');
    cache.agentDeleted('a1', at);
    assert.deepEqual(cache.take('s1')?.doc.agent_deleted_at, at);
    assert.equal(cache.take('s2')?.doc.agent_deleted_at, undefined);
  });

  it('stamps a copy saved after the notice by a turn that read its session before the stamp', () => {
    const cache = new SessionCache();
    const at = new Date('2026-11-25T05:00:00Z');
    cache.agentDeleted('a1', at);
    cache.remember(doc('s1', 'a1'), emptySessionState('s1'), new Map());
    assert.deepEqual(cache.take('s1')?.doc.agent_deleted_at, at);
  });

  it('keeps the stamp a session was read with', () => {
    const cache = new SessionCache();
    const first = new Date('2026-11-25T05:00:00Z');
    cache.remember({ ...doc('s1', 'a1'), agent_deleted_at: first }, emptySessionState('s1'), new Map());
    cache.agentDeleted('a1', new Date('2026-11-25T06:00:00Z'));
    assert.deepEqual(cache.take('s1')?.doc.agent_deleted_at, first);
  });
});
