import assert from 'node:assert/strict';
import { newId } from '../../src/domain/ids.js';
import { AgentStore } from '../../src/store/agents.js';
import { scriptedAgent } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { json } from '../support/wait.js';

interface Version {
  id: string;
  agent_id: string;
  number: number;
  active: boolean;
}

describe('version management', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ roles: ['web', 'worker'], env: { TROUPE_SESSION_SHARDS: '2' } });
  });
  after(async () => h?.close());

  /** An agent with two versions, the second active. */
  async function twoVersions(): Promise<{ agentId: string; v1: string; v2: string; orgId: string }> {
    const { agentId, versionId: v1, orgId } = await scriptedAgent(h, [{ text: 'hi' }]);
    const agents = new AgentStore(h.running.core.db);
    const first = (await agents.getVersion(orgId, v1))!;
    const v2 = await agents.createVersion(orgId, agentId, { id: newId('version'), snapshotId: newId('snapshot'), content: first }, true);
    return { agentId, v1, v2: v2!._id, orgId };
  }

  it('reads one version and activates an older one; open sessions keep theirs', async () => {
    const { agentId, v1, v2 } = await twoVersions();
    const read = await json<Version>(await h.api(`/v1/agents/${agentId}/versions/${v1}`), 200);
    assert.deepEqual([read.id, read.agent_id, read.number, read.active], [v1, agentId, 1, false]);
    const open = await json<{ id: string; version_id: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST' }), 201);
    assert.equal(open.version_id, v2);

    const activated = await json<Version>(await h.api(`/v1/agents/${agentId}/versions/${v1}/activate`, { method: 'POST' }), 200);
    assert.deepEqual([activated.id, activated.active], [v1, true]);
    assert.equal((await json<{ active_version_id: string }>(await h.api(`/v1/agents/${agentId}`), 200)).active_version_id, v1);
    assert.equal((await json<Version>(await h.api(`/v1/agents/${agentId}/versions/${v2}`), 200)).active, false);
    const fresh = await json<{ version_id: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST' }), 201);
    assert.equal(fresh.version_id, v1, 'new sessions use the activated version');
    assert.equal((await json<{ version_id: string }>(await h.api(`/v1/sessions/${open.id}`), 200)).version_id, v2, 'the open session keeps its version');
    // Activating again is harmless.
    await json(await h.api(`/v1/agents/${agentId}/versions/${v1}/activate`, { method: 'POST' }), 200);
  });

  it('answers 404 for unknown versions, versions of another agent or org, and deleted agents', async () => {
    const a = await twoVersions();
    const b = await twoVersions();
    for (const path of [`/v1/agents/${a.agentId}/versions/${b.v1}`, `/v1/agents/${a.agentId}/versions/${newId('version')}`, `/v1/agents/${newId('agent')}/versions/${a.v1}`]) {
      const err = await json<{ error: { type: string } }>(await h.api(path), 404);
      assert.equal(err.error.type, 'not_found_error');
      await json(await h.api(`${path}/activate`, { method: 'POST' }), 404);
    }
    const other = await h.running.core.stores.orgs.create(`versions-other-${Date.now()}`);
    const { key } = await h.running.core.stores.apiKeys.create(other._id, 'api');
    await json(await h.api(`/v1/agents/${a.agentId}/versions/${a.v1}`, { headers: { Authorization: `Bearer ${key}` } }), 404);
    await json(await h.api(`/v1/agents/${a.agentId}/versions/${a.v1}/activate`, { method: 'POST', headers: { Authorization: `Bearer ${key}` } }), 404);

    await json(await h.api(`/v1/agents/${a.agentId}`, { method: 'DELETE' }), 200);
    const gone = await json<{ error: { code: string } }>(await h.api(`/v1/agents/${a.agentId}/versions/${a.v1}/activate`, { method: 'POST' }), 404);
    assert.equal(gone.error.code, 'agent_not_found');
    const agent = await json<{ active_version_id: string }>(await h.api(`/v1/agents/${a.agentId}`), 200);
    assert.equal(agent.active_version_id, a.v2, 'a refused activation changes nothing');
    await json(await h.api(`/v1/agents/${a.agentId}/versions/${a.v1}`), 200);
  });

  it('documents both endpoints in the OpenAPI document', async () => {
    const doc = await json<{ paths: Record<string, Record<string, unknown>> }>(await h.api('/v1/openapi.json'), 200);
    assert.ok(doc.paths['/v1/agents/{agent_id}/versions/{version_id}'].get);
    assert.ok(doc.paths['/v1/agents/{agent_id}/versions/{version_id}/activate'].post);
  });
});
