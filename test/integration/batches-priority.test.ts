import assert from 'node:assert/strict';
import { scriptedAgent } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';

const BATCH_ITEMS = 2000;
/** The bound an interactive turn must meet while the batch is queued (measured: see docs/benchmarks.md). */
const INTERACTIVE_BOUND_MS = 10_000;
/**
 * The time bound holds on the local default store. FerretDB v1 on SQLite (the semantics leg of the matrix) is
 * saturated by the batch's 2,000 session writes alone (a single GET of the batch took 81 s there under CI load),
 * so on it only the ordering is asserted: the interactive turn completes while the batch has barely started.
 */
const TIME_BOUND_APPLIES = process.env.TROUPE_TEST_MONGO_KIND !== 'ferretdb';

describe('session batches: interactive work goes first', function () {
  this.timeout(180_000);
  let h: Harness;
  let agentId: string;

  before(async () => {
    h = await startHarness({ roles: ['web', 'router', 'worker'], env: { TROUPE_SESSION_SHARDS: '8' } });
    ({ agentId } = await scriptedAgent(h, [{ text: 'Reply.' }]));
  });
  after(async () => h?.close());

  it('hands off every first turn of a batch larger than one wake slice: all of them complete', async function () {
    // FerretDB v1 on SQLite drains 2,000 sessions in minutes (see above); the hand-off is the same code on every store.
    // It runs before the 2,000-item batch below, whose turns would otherwise be queued ahead of its 1,200 and
    // drained first (3,200 turns where 1,200 are the subject: about 24 s more on CI's first leg).
    if (!TIME_BOUND_APPLIES) this.skip();
    const items = Array.from({ length: 1200 }, (_, i) => ({ agent_id: agentId, message: { content: [{ type: 'text', text: `slice ${i}` }] } }));
    const res = await h.api('/v1/session-batches', { method: 'POST', json: { items } });
    assert.equal(res.status, 201);
    const { batch_id } = (await res.json()) as { batch_id: string };
    let counts: Record<string, number> = {};
    for (let i = 0; i < 300 && counts.completed !== items.length; i++) {
      if (i) await new Promise((r) => setTimeout(r, 500));
      counts = ((await (await h.api(`/v1/session-batches/${batch_id}`)).json()) as { counts: Record<string, number> }).counts;
    }
    assert.equal(counts.completed, items.length, `batch counts after the wait: ${JSON.stringify(counts)}`);
  });

  it(`completes an interactive message within ${INTERACTIVE_BOUND_MS} ms while a ${BATCH_ITEMS}-item batch runs`, async () => {
    const session = (await (await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: {} })).json()) as { id: string };
    const items = Array.from({ length: BATCH_ITEMS }, (_, i) => ({ agent_id: agentId, metadata: { row: String(i) }, message: { content: [{ type: 'text', text: `item ${i}` }] } }));
    const t0 = Date.now();
    const res = await h.api('/v1/session-batches', { method: 'POST', json: { items } });
    const batch = (await res.json()) as { batch_id: string; sessions: { session_id: string | null }[] };
    const accepted = Date.now() - t0;
    console.log(`      POST of ${BATCH_ITEMS} items answered in ${accepted} ms`);
    assert.equal(res.status, 201);
    assert.equal(batch.sessions.filter((s) => s.session_id).length, BATCH_ITEMS);

    const t1 = Date.now();
    const sync = await h.api(`/v1/sessions/${session.id}/messages/sync`, { method: 'POST', json: { parts: [{ type: 'text', text: 'me first' }] } });
    const interactive = Date.now() - t1;
    const message = (await sync.json()) as { status: string };
    console.log(`      interactive sync answered ${sync.status} ${message.status} in ${interactive} ms`);
    const tg = Date.now();
    const during = (await (await h.api(`/v1/session-batches/${batch.batch_id}`)).json()) as { counts: Record<string, number> };
    console.log(`      GET of the batch took ${Date.now() - tg} ms: ${JSON.stringify(during.counts)}`);
    assert.equal(sync.status, 200);
    assert.equal(message.status, 'completed');
    if (TIME_BOUND_APPLIES) assert.ok(interactive < INTERACTIVE_BOUND_MS, `interactive turn took ${interactive} ms`);

    // The batch had barely started: the interactive turn went ahead of ~2,000 queued batch turns.
    assert.ok(during.counts.queued > BATCH_ITEMS / 2, `batch progress when the interactive turn finished: ${JSON.stringify(during.counts)}`);
  });
});
