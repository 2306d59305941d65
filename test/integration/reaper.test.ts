import assert from 'node:assert/strict';
import { DELIVERY_RETENTION_MS, reap, SESSIONS_PER_RUN } from '../../src/app/reaper.js';
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

  it('goes on where the last run stopped, so old sessions still in use never hide expired ones behind them', async function () {
    this.timeout(60_000);
    const { stores } = h.running.core;
    const org = await stores.orgs.create(`retention-${Date.now()}`);
    await stores.orgs.setSettings(org._id, { session_retention_days: 1 });
    const longAgo = new Date(Date.now() - 10 * 24 * 60 * 60 * 1000);
    // A full run's worth of old sessions that were active a minute ago, then one that expired, created last.
    const ids = Array.from({ length: SESSIONS_PER_RUN + 1 }, (_, i) => `ses_ret_${org._id}_${String(i).padStart(4, '0')}`);
    const session = (id: string, active: boolean) => ({
      _id: id, org_id: org._id, agent_id: 'agt', version_id: 'ver', name: null, storage_binding_id: null, llm_id: 'main', internet_access: false, metadata: {}, secrets: null, llm_api_key: null,
      batch_id: null, priority: 'interactive' as const, created_at: longAgo, status: 'idle' as const, last_sequence: active ? 1 : 0, last_message_id: null, last_message_status: null,
      running_message_id: null, queued_message_ids: [], recent_commands: [],
    });
    await stores.sessions.col.insertMany(ids.map((id, i) => session(id, i < SESSIONS_PER_RUN)));
    await stores.ledger.col.insertMany(ids.slice(0, SESSIONS_PER_RUN).map((id) => ({ _id: `${id}:1`, org_id: org._id, session_id: id, sequence_number: 1, message_id: null, type: 'session.status_changed', source: 'platform', actor: { type: 'system', id: null }, data_json: '{}', created_at: new Date(Date.now() - 60_000) }) as never));
    const deleted: string[] = [];
    const hooks = { deleteSession: async (s: { _id: string }) => void deleted.push(s._id), retentionAfter: new Map<string, string>() };
    await reap(stores, Date.now(), hooks);
    assert.deepEqual(deleted, [], 'the first run examined the sessions still in use');
    await reap(stores, Date.now(), hooks);
    assert.deepEqual(deleted, [ids.at(-1)], 'the next run reached the expired one');
    await stores.orgs.setSettings(org._id, { session_retention_days: null });
  });
});
