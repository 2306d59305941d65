import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { ulid } from 'ulid';
import { ConflictError, InvalidRequestError, NotFoundError, PayloadTooLargeError, PermissionError } from '../../domain/errors.js';
import type { SnapshotDoc } from '../../store/snapshots.js';
import type { Stores } from '../../store/stores.js';

/** An upload holding the lease longer than this is presumed dead (its process crashed), and the lease is free again. */
const LEASE_MS = 15 * 60 * 1000;

type BlobSink = ReturnType<Stores['blobs']['upload']>;

/** The archive as the request carries it: read as a stream, never buffered. */
export interface UploadBody {
  stream: Readable;
  /** The length the client declared (NaN when it declared none); more than the reservation is refused before reading. */
  declaredBytes: number;
  /** Called when the rest of the body will not be read, so the transport stops the client sending it. */
  abandon(): void;
}

export interface ReceivedUpload {
  sha256: string;
  size_bytes: number;
}

/** Why no lease could be taken, as the error the client sees. */
export function leaseRefusal(doc: SnapshotDoc | null, id: string, now: Date): Error {
  if (!doc) return new NotFoundError('source_snapshot', id);
  if (doc.status !== 'pending_upload') return new ConflictError(`Source snapshot ${id} is ${doc.status}; it no longer accepts uploads.`, 'snapshot_not_pending');
  if (doc.expires_at <= now) return new PermissionError(`The upload target expired at ${doc.expires_at.toISOString()}; reserve a new source snapshot.`, 'upload_expired');
  return new ConflictError(`Another upload to source snapshot ${id} is in progress.`, 'upload_in_progress');
}

/**
 * Copies the body into the blob store with backpressure, hashing as it goes.
 * Past `limit` bytes it stops at once with 413; the caller aborts the blob.
 */
function receive(body: Readable, sink: BlobSink, limit: number): Promise<ReceivedUpload> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    let size = 0;
    let done = false;
    const finish = (err: Error | null) => {
      if (done) return;
      done = true;
      body.off('data', onData);
      if (err) {
        body.resume();
        reject(err);
      } else resolve({ sha256: hash.digest('hex'), size_bytes: size });
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) return finish(new PayloadTooLargeError(`The upload exceeds the reserved size_bytes of ${limit}.`, 'upload_too_large'));
      hash.update(chunk);
      if (!sink.write(chunk)) {
        body.pause();
        sink.once('drain', () => body.resume());
      }
    };
    body.on('data', onData);
    body.once('end', () => {
      if (!done) sink.end(() => finish(null));
    });
    sink.once('error', (e) => finish(e));
    body.once('error', (e) => finish(new InvalidRequestError(`The upload could not be read: ${e.message}`, undefined, 'body_read_error')));
    // An http.IncomingMessage's event when the client goes away mid-body.
    body.once('aborted', () => finish(new InvalidRequestError('The upload was aborted by the client.', undefined, 'body_aborted')));
  });
}

/**
 * `PUT /v1/source-snapshots/{id}/upload` once its token is checked: takes the
 * snapshot's upload lease (one upload at a time), streams the body into the
 * blob store and records what arrived. Any refusal after the lease releases it.
 */
export async function receiveSnapshotUpload(stores: Pick<Stores, 'snapshots' | 'blobs'>, orgId: string, id: string, body: UploadBody): Promise<ReceivedUpload> {
  const now = new Date();
  const leaseId = ulid();
  const doc = await stores.snapshots.acquireUploadLease(orgId, id, leaseId, now, LEASE_MS);
  if (!doc) throw leaseRefusal(await stores.snapshots.get(orgId, id), id, now);
  if (body.declaredBytes > doc.size_bytes) {
    await stores.snapshots.abandonUpload(orgId, id, leaseId);
    body.abandon();
    body.stream.resume();
    throw new PayloadTooLargeError(`The upload is ${body.declaredBytes} bytes; the reservation is for ${doc.size_bytes}.`, 'upload_too_large');
  }
  // A re-upload before finalize replaces the earlier object.
  await stores.blobs.delete('snapshots', id);
  const sink = stores.blobs.upload('snapshots', id, 'source.tar.gz', { org_id: orgId });
  let measured: ReceivedUpload;
  try {
    measured = await receive(body.stream, sink, doc.size_bytes);
  } catch (err) {
    body.abandon();
    await sink.abort().catch(() => undefined);
    await stores.snapshots.abandonUpload(orgId, id, leaseId);
    throw err;
  }
  if (!(await stores.snapshots.completeUpload(orgId, id, leaseId, measured))) {
    // Deleted (or leased anew after a very slow upload) meanwhile: this object belongs to no reservation.
    await stores.blobs.delete('snapshots', id);
    throw new ConflictError(`Source snapshot ${id} changed during the upload; upload again.`, 'upload_superseded');
  }
  return measured;
}
