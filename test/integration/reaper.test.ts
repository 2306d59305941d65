import assert from 'node:assert/strict';
import { DELIVERY_RETENTION_MS, reap } from '../../src/maintenance/reaper.js';
import { reserve, tarGz } from '../support/archives.js';
import { startHarness, type Harness } from '../support/harness.js';

describe('reaper', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ roles: ['web'], env: { TROUPE_UPLOAD_TTL_SECONDS: '1' } });
  });
  after(async () => {
    await h?.close();
  });

  it('removes reservations never finalized, with their bytes, and keeps live ones', async () => {
    const stores = h.running.core.stores;
    const archive = await tarGz([{ name: 'a.txt', content: 'x' }]);
    const stale = await reserve(h, archive);
    await fetch(stale.upload_url, { method: 'PUT', headers: stale.upload_headers, body: archive }).then((r) => r.text());
    const fresh = await reserve(h, archive);
    const later = Date.now() + 2 * 60 * 60 * 1000;
    await h.running.core.db.collection('source_snapshots').updateOne({ _id: fresh.source_snapshot_id as never }, { $set: { expires_at: new Date(later + 60_000) } });
    const r = await reap(stores, later);
    assert.equal(r.snapshots, 1);
    const org = (await stores.orgs.byName('default'))!._id;
    assert.equal(await stores.snapshots.get(org, stale.source_snapshot_id), null);
    assert.equal(await stores.blobs.exists('snapshots', stale.source_snapshot_id), null);
    assert.ok(await stores.snapshots.get(org, fresh.source_snapshot_id));
    assert.equal((await reap(stores, later)).snapshots, 0, 'idempotent');
  });

  it('removes finished webhook deliveries past retention, never pending ones', async () => {
    // Logged the way the delivery actor logs them, so each has its own event id: the unique
    // (org_id, event_id) index refuses a second document without one, as MongoDB does.
    const deliveries = h.running.core.stores.webhookDeliveries;
    const old = new Date(Date.now() - DELIVERY_RETENTION_MS - 1000);
    const log = (event: string, status: 'succeeded' | 'pending' | 'failed', at: Date) =>
      deliveries.insertWithAttempt(
        { org_id: 'o', agent_id: 'agt_r', event_id: event, event_type: 'session.completed', session_id: null, message_id: null, batch_id: null, body: '{}' },
        { attempted_at: at, status_code: status === 'succeeded' ? 200 : 500, error: null, duration_ms: 1, redelivery: false },
        { status, next_attempt_at: status === 'pending' ? new Date() : null },
      );
    const oldDone = await log('evt_old_done', 'succeeded', old);
    const oldPending = await log('evt_old_pending', 'pending', old);
    const recent = await log('evt_recent', 'failed', new Date());
    const r = await reap(h.running.core.stores);
    assert.equal(r.deliveries, 1);
    const left = (await deliveries.col.find({ org_id: 'o' }).toArray()).map((d) => d._id).sort();
    assert.deepEqual(left, [oldPending._id, recent._id].sort());
    assert.equal(await deliveries.byId(oldDone._id), null);
  });
});
