import { ConflictError, NotFoundError } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import type { SnapshotDoc, SnapshotMetadata } from '../../store/snapshots.js';
import type { Stores } from '../../store/stores.js';
import type { UploadTokens } from '../agents/upload-token.js';
import { verdictFor } from './verdict.js';

/**
 * The source-snapshot use cases behind `/v1/source-snapshots` other than the
 * streamed upload (./upload.ts): reserve, finalize, read, delete. Each throws
 * the domain error the client sees; the route shapes the answer.
 */
export interface SnapshotReservation {
  doc: SnapshotDoc;
  /** The upload token for this snapshot and org, good until the reservation expires. */
  token: string;
}

/** `POST /v1/source-snapshots`: the reservation, expiring `ttlSeconds` from now, and the token that authorises its upload. */
export async function reserveSnapshot(
  stores: Pick<Stores, 'snapshots'>,
  tokens: Pick<UploadTokens, 'sign'>,
  ttlSeconds: number,
  orgId: string,
  input: { sha256: string; size_bytes: number; metadata?: SnapshotMetadata },
): Promise<SnapshotReservation> {
  const id = newId('snapshot');
  const exp = Math.floor(Date.now() / 1000) + ttlSeconds;
  const doc = await stores.snapshots.reserve(orgId, id, { sha256: input.sha256, size_bytes: input.size_bytes, metadata: input.metadata ?? {} }, new Date(exp * 1000));
  return { doc, token: tokens.sign({ snapshotId: id, orgId, exp }) };
}

export async function readSnapshot(snapshots: Pick<Stores['snapshots'], 'get'>, orgId: string, id: string): Promise<SnapshotDoc> {
  const doc = await snapshots.get(orgId, id);
  if (!doc) throw new NotFoundError('source_snapshot', id);
  return doc;
}

/**
 * `POST /v1/source-snapshots/{id}/finalize`: verifies the stored object against
 * the reservation. Finalizing twice answers the settled snapshot; a failed
 * verdict drops the object, which no version can now reference.
 */
export async function finalizeSnapshot(stores: Pick<Stores, 'snapshots' | 'blobs'>, orgId: string, id: string): Promise<SnapshotDoc> {
  const doc = await readSnapshot(stores.snapshots, orgId, id);
  if (doc.status !== 'pending_upload') return doc;
  if (doc.upload_lease && doc.upload_lease.until > new Date()) {
    throw new ConflictError('An upload to this snapshot is still in progress; finalize after it completes.', 'upload_in_progress');
  }
  const verdict = await verdictFor(stores, doc);
  if (verdict.status === 'failed') await stores.blobs.delete('snapshots', doc._id);
  return (await stores.snapshots.finalize(orgId, doc._id, verdict)) ?? doc;
}

/** `DELETE /v1/source-snapshots/{id}`: only while no version references it, and its archive with it. */
export async function deleteSnapshot(stores: Pick<Stores, 'snapshots' | 'blobs'>, orgId: string, id: string): Promise<void> {
  const outcome = await stores.snapshots.deleteUnattached(orgId, id);
  if (outcome === 'missing') throw new NotFoundError('source_snapshot', id);
  if (outcome === 'attached') throw new ConflictError(`Source snapshot ${id} is attached to an agent version and is immutable.`, 'snapshot_attached');
  await stores.blobs.delete('snapshots', id);
}
