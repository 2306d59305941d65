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
    const col = h.running.core.db.collection('webhook_deliveries');
    const old = new Date(Date.now() - DELIVERY_RETENTION_MS - 1000);
    await col.insertMany([
      { _id: 'whd_old_done' as never, org_id: 'o', status: 'succeeded', completed_at: old },
      { _id: 'whd_old_pending' as never, org_id: 'o', status: 'pending', completed_at: null },
      { _id: 'whd_recent' as never, org_id: 'o', status: 'failed', completed_at: new Date() },
    ]);
    const r = await reap(h.running.core.stores);
    assert.equal(r.deliveries, 1);
    assert.deepEqual((await col.find({}).toArray()).map((d) => d._id).sort(), ['whd_old_pending', 'whd_recent']);
  });
});
