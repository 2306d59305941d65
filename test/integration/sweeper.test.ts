import assert from 'node:assert/strict';
import { ROUTER_PROXY } from '../../src/domain/actors/router-proxy.js';
import { scriptedAgent } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { json, until } from '../support/wait.js';

interface Ev {
  sequence_number: number;
  type: string;
  data: { to?: string };
}

describe('stranded-work sweeper', function () {
  this.timeout(60_000);
  let h: Harness;
  before(async () => {
    h = await startHarness({ env: { TROUPE_SESSION_SHARDS: '2', TROUPE_SWEEP_INTERVAL_MS: '300' } });
  });
  after(async () => h?.close());

  it('resumes a running session whose queued jobs Redis lost, once, with no duplicate turn', async () => {
    const { agentId } = await scriptedAgent(h, [{ text: 'resumed' }]);
    const routerProxy = h.running.core.plane.queues.queue(ROUTER_PROXY.name);
    // Hold model calls back, lose them (as a Redis restart without persistence would), then let workers run again.
    await routerProxy.pause();
    const sid = (await json<{ id: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST' }), 201)).id;
    const posted = await json<{ message: { id: string } }>(await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text: 'hi' }] } }), 201);
    const mid = posted.message.id;
    await until(() => routerProxy.getJob(`model-${mid}-1-0`));
    await routerProxy.obliterate({ force: true });
    assert.equal(await routerProxy.getJob(`model-${mid}-1-0`), undefined);
    const lostAt = Date.now();
    await routerProxy.resume();
    const done = await until(async () => {
      const m = await json<{ status: string }>(await h.api(`/v1/sessions/${sid}/messages/${mid}`), 200);
      return m.status === 'completed' ? m : null;
    }, 15_000);
    assert.equal(done.status, 'completed');
    assert.ok(Date.now() - lostAt < 10_000, `recovered in ${Date.now() - lostAt} ms`);
    // A few more sweeps must not add anything.
    await new Promise((r) => setTimeout(r, 1200));
    const { events } = await json<{ events: Ev[] }>(await h.api(`/v1/sessions/${sid}/events?limit=100`), 200);
    assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i + 1));
    assert.equal(events.filter((e) => e.type === 'assistant.message_completed').length, 1);
    assert.equal(events.at(-1)!.type, 'session.status_changed');
    assert.match(h.logs(), /resumed sessions whose queued work was lost/);
  });
});
