import type { Collection, Db } from 'mongodb';

export type SnapshotStatus = 'pending_upload' | 'ready' | 'failed';

export type SnapshotMetadata = Record<string, string | number | boolean>;

export interface SnapshotDoc {
  _id: string;
  org_id: string;
  format: 'tar.gz';
  /** As reserved by the client. */
  sha256: string;
  size_bytes: number;
  /** Client audit data (commit ids, CI runs) as JSON: its keys are the client's and may hold dots. */
  metadata_json: string;
  status: SnapshotStatus;
  failure_reason: string | null;
  expires_at: Date;
  created_at: Date;
  finalized_at: Date | null;
  /** What the last complete upload measured; finalize re-measures the stored blob anyway. */
  uploaded: { sha256: string; size_bytes: number; at: Date } | null;
  /** One upload at a time: a second concurrent PUT would interleave GridFS chunks. */
  upload_lease: { id: string; until: Date } | null;
  /** Versions referencing the snapshot; while above zero it is immutable and cannot be deleted. */
  attached_count: number;
}

export function snapshotMetadata(doc: SnapshotDoc): SnapshotMetadata {
  return JSON.parse(doc.metadata_json) as SnapshotMetadata;
}

/** Source snapshot reservations; the archive bytes live in the GridFS bucket `snapshots` under the same id. */
export class SnapshotStore {
  private readonly col: Collection<SnapshotDoc>;

  constructor(db: Db) {
    this.col = db.collection<SnapshotDoc>('source_snapshots');
  }

  async reserve(orgId: string, id: string, r: { sha256: string; size_bytes: number; metadata: SnapshotMetadata }, expiresAt: Date): Promise<SnapshotDoc> {
    const doc: SnapshotDoc = {
      _id: id,
      org_id: orgId,
      format: 'tar.gz',
      sha256: r.sha256,
      size_bytes: r.size_bytes,
      metadata_json: JSON.stringify(r.metadata),
      status: 'pending_upload',
      failure_reason: null,
      expires_at: expiresAt,
      created_at: new Date(),
      finalized_at: null,
      uploaded: null,
      upload_lease: null,
      attached_count: 0,
    };
    await this.col.insertOne(doc);
    return doc;
  }

  get(orgId: string, id: string): Promise<SnapshotDoc | null> {
    return this.col.findOne({ _id: id, org_id: orgId });
  }

  /** Takes the upload lease while the snapshot still accepts uploads; null when it does not or another upload holds it. */
  acquireUploadLease(orgId: string, id: string, leaseId: string, now: Date, leaseMs: number): Promise<SnapshotDoc | null> {
    return this.col.findOneAndUpdate(
      { _id: id, org_id: orgId, status: 'pending_upload', expires_at: { $gt: now }, $or: [{ upload_lease: null }, { 'upload_lease.until': { $lte: now } }] },
      { $set: { upload_lease: { id: leaseId, until: new Date(now.getTime() + leaseMs) } } },
      { returnDocument: 'after' },
    );
  }

  /** False when the lease was lost meanwhile (the snapshot was deleted, or the lease expired and was retaken). */
  async completeUpload(orgId: string, id: string, leaseId: string, measured: { sha256: string; size_bytes: number }): Promise<boolean> {
    const r = await this.col.updateOne(
      { _id: id, org_id: orgId, 'upload_lease.id': leaseId },
      { $set: { uploaded: { ...measured, at: new Date() }, upload_lease: null } },
    );
    return r.matchedCount === 1;
  }

  /** Releases the lease of a failed upload; the partial object is already gone. */
  async abandonUpload(orgId: string, id: string, leaseId: string): Promise<void> {
    await this.col.updateOne({ _id: id, org_id: orgId, 'upload_lease.id': leaseId }, { $set: { uploaded: null, upload_lease: null } });
  }

  /** Records the verdict once; a repeated finalize sees the first one. */
  async finalize(orgId: string, id: string, verdict: { status: 'ready' | 'failed'; failure_reason: string | null }): Promise<SnapshotDoc | null> {
    await this.col.updateOne({ _id: id, org_id: orgId, status: 'pending_upload' }, { $set: { ...verdict, finalized_at: new Date() } });
    return this.get(orgId, id);
  }

  /** Marks a ready snapshot as referenced by a version; null when it is not ready (or unknown). */
  attach(orgId: string, id: string): Promise<SnapshotDoc | null> {
    return this.col.findOneAndUpdate({ _id: id, org_id: orgId, status: 'ready' }, { $inc: { attached_count: 1 } }, { returnDocument: 'after' });
  }

  /** Undoes attach when the version could not be written. */
  async detach(orgId: string, id: string): Promise<void> {
    await this.col.updateOne({ _id: id, org_id: orgId, attached_count: { $gt: 0 } }, { $inc: { attached_count: -1 } });
  }

  /** Deletes the record unless a version references it; the caller removes the blob. */
  async deleteUnattached(orgId: string, id: string): Promise<'deleted' | 'attached' | 'missing'> {
    const r = await this.col.deleteOne({ _id: id, org_id: orgId, attached_count: 0 });
    if (r.deletedCount === 1) return 'deleted';
    return (await this.get(orgId, id)) ? 'attached' : 'missing';
  }

  /** Reservations whose upload target expired before anything was finalized: ids and orgs, for the reaper. */
  async expiredReservations(before: Date, limit: number): Promise<{ _id: string; org_id: string }[]> {
    return this.col.find({ status: 'pending_upload', expires_at: { $lt: before } }, { projection: { _id: 1, org_id: 1 } }).limit(limit).toArray();
  }
}
