import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { ulid } from 'ulid';
import type { GridFSBucketWriteStream } from 'mongodb';
import type { UploadTokens } from '../../../../app/agents/upload-token.js';
import { AuthenticationError, ConflictError, InvalidRequestError, NotFoundError, PayloadTooLargeError, PermissionError, UnsupportedMediaTypeError } from '../../../../domain/errors.js';
import type { SnapshotDoc } from '../../../../store/snapshots.js';
import type { Stores } from '../../../../store/stores.js';
import type { Ctx } from '../../types.js';

export const UPLOAD_TOKEN_HEADER = 'X-Upload-Token';
export const UPLOAD_CONTENT_TYPE = 'application/gzip';
const ACCEPTED_TYPES = new Set([UPLOAD_CONTENT_TYPE, 'application/x-gzip', 'application/octet-stream']);
/** An upload holding the lease longer than this is presumed dead (its process crashed), and the lease is free again. */
const LEASE_MS = 15 * 60 * 1000;

/** The token stands in for the API key: it names the snapshot and org it is good for. */
function authorise(ctx: Ctx, tokens: UploadTokens): { orgId: string } {
  const token = ctx.get(UPLOAD_TOKEN_HEADER);
  if (!token) throw new AuthenticationError(`Send the ${UPLOAD_TOKEN_HEADER} header returned with the reservation.`, 'missing_upload_token');
  const res = tokens.verify(token, Math.floor(Date.now() / 1000));
  if (!res.ok && res.reason === 'expired') throw new PermissionError('The upload target has expired; reserve a new source snapshot.', 'upload_expired');
  if (!res.ok || res.grant.snapshotId !== ctx.params.source_snapshot_id) {
    throw new AuthenticationError(`The ${UPLOAD_TOKEN_HEADER} is not valid for this snapshot.`, 'invalid_upload_token');
  }
  return { orgId: res.grant.orgId };
}

/** Why no lease could be taken, as the error the client sees. */
function leaseRefusal(doc: SnapshotDoc | null, id: string, now: Date): Error {
  if (!doc) return new NotFoundError('source_snapshot', id);
  if (doc.status !== 'pending_upload') return new ConflictError(`Source snapshot ${id} is ${doc.status}; it no longer accepts uploads.`, 'snapshot_not_pending');
  if (doc.expires_at <= now) return new PermissionError(`The upload target expired at ${doc.expires_at.toISOString()}; reserve a new source snapshot.`, 'upload_expired');
  return new ConflictError(`Another upload to source snapshot ${id} is in progress.`, 'upload_in_progress');
}

/**
 * Copies the request body into GridFS with backpressure, hashing as it goes.
 * Past `limit` bytes it stops at once with 413; the caller aborts the blob.
 */
function receive(req: IncomingMessage, sink: GridFSBucketWriteStream, limit: number): Promise<{ sha256: string; size_bytes: number }> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    let size = 0;
    let done = false;
    const finish = (err: Error | null) => {
      if (done) return;
      done = true;
      req.off('data', onData);
      if (err) {
        req.resume();
        reject(err);
      } else resolve({ sha256: hash.digest('hex'), size_bytes: size });
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) return finish(new PayloadTooLargeError(`The upload exceeds the reserved size_bytes of ${limit}.`, 'upload_too_large'));
      hash.update(chunk);
      if (!sink.write(chunk)) {
        req.pause();
        sink.once('drain', () => req.resume());
      }
    };
    req.on('data', onData);
    req.once('end', () => {
      if (!done) sink.end(() => finish(null));
    });
    sink.once('error', (e) => finish(e));
    req.once('error', (e) => finish(new InvalidRequestError(`The upload could not be read: ${e.message}`, undefined, 'body_read_error')));
    req.once('aborted', () => finish(new InvalidRequestError('The upload was aborted by the client.', undefined, 'body_aborted')));
  });
}

/** `PUT /v1/source-snapshots/{id}/upload`: authorised by the upload token, streamed into GridFS. */
export async function handleUpload(ctx: Ctx, stores: Stores, tokens: UploadTokens): Promise<unknown> {
  const id = ctx.params.source_snapshot_id;
  const { orgId } = authorise(ctx, tokens);
  const type = (ctx.get('Content-Type') || '').split(';')[0].trim().toLowerCase();
  if (type && !ACCEPTED_TYPES.has(type)) throw new UnsupportedMediaTypeError(UPLOAD_CONTENT_TYPE);
  const now = new Date();
  const leaseId = ulid();
  const doc = await stores.snapshots.acquireUploadLease(orgId, id, leaseId, now, LEASE_MS);
  if (!doc) throw leaseRefusal(await stores.snapshots.get(orgId, id), id, now);
  const declared = Number(ctx.get('Content-Length') || NaN);
  if (declared > doc.size_bytes) {
    await stores.snapshots.abandonUpload(orgId, id, leaseId);
    ctx.set('Connection', 'close');
    ctx.req.resume();
    throw new PayloadTooLargeError(`The upload is ${declared} bytes; the reservation is for ${doc.size_bytes}.`, 'upload_too_large');
  }
  // A re-upload before finalize replaces the earlier object.
  await stores.blobs.delete('snapshots', id);
  const sink = stores.blobs.upload('snapshots', id, 'source.tar.gz', { org_id: orgId });
  let measured: { sha256: string; size_bytes: number };
  try {
    measured = await receive(ctx.req, sink, doc.size_bytes);
  } catch (err) {
    ctx.set('Connection', 'close');
    await sink.abort().catch(() => undefined);
    await stores.snapshots.abandonUpload(orgId, id, leaseId);
    throw err;
  }
  if (!(await stores.snapshots.completeUpload(orgId, id, leaseId, measured))) {
    // Deleted (or leased anew after a very slow upload) meanwhile: this object belongs to no reservation.
    await stores.blobs.delete('snapshots', id);
    throw new ConflictError(`Source snapshot ${id} changed during the upload; upload again.`, 'upload_superseded');
  }
  return { source_snapshot_id: id, status: 'pending_upload', received_bytes: measured.size_bytes, sha256: measured.sha256 };
}
