import assert from 'node:assert/strict';
import { leaseRefusal } from '../../src/app/source-snapshots/upload.js';
import { TroupeError } from '../../src/domain/errors.js';
import type { SnapshotDoc } from '../../src/store/snapshots.js';

const NOW = new Date('2026-01-01T00:00:00Z');
const snapshot = (extra: Partial<SnapshotDoc>): SnapshotDoc =>
  ({ _id: 'snap_1', status: 'pending_upload', expires_at: new Date(NOW.getTime() + 60_000), ...extra }) as SnapshotDoc;

function refused(doc: SnapshotDoc | null): { status: number; code: string } {
  const err = leaseRefusal(doc, 'snap_1', NOW);
  assert.ok(err instanceof TroupeError);
  return { status: err.status, code: err.code };
}

describe('why a snapshot upload got no lease (src/app/source-snapshots)', () => {
  it('names the first reason in order: missing, settled, expired, then another upload', () => {
    assert.deepEqual(refused(null), { status: 404, code: 'source_snapshot_not_found' });
    // A settled snapshot is reported as settled even once its upload target has expired.
    assert.deepEqual(refused(snapshot({ status: 'ready', expires_at: new Date(NOW.getTime() - 1) })), { status: 409, code: 'snapshot_not_pending' });
    assert.deepEqual(refused(snapshot({ expires_at: NOW })), { status: 403, code: 'upload_expired' });
    assert.deepEqual(refused(snapshot({})), { status: 409, code: 'upload_in_progress' });
  });
});
