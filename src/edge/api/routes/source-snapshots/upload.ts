import type { UploadTokens } from '../../../../app/agents/upload-token.js';
import { receiveSnapshotUpload } from '../../../../app/source-snapshots/upload.js';
import { AuthenticationError, PermissionError, UnsupportedMediaTypeError } from '../../../../domain/errors.js';
import type { Stores } from '../../../../store/stores.js';
import type { Ctx } from '../../types.js';

export const UPLOAD_TOKEN_HEADER = 'X-Upload-Token';
export const UPLOAD_CONTENT_TYPE = 'application/gzip';
const ACCEPTED_TYPES = new Set([UPLOAD_CONTENT_TYPE, 'application/x-gzip', 'application/octet-stream']);

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

/** `PUT /v1/source-snapshots/{id}/upload`: authorised by the upload token, streamed into the blob store by the service. */
export async function handleUpload(ctx: Ctx, stores: Stores, tokens: UploadTokens): Promise<unknown> {
  const id = ctx.params.source_snapshot_id;
  const { orgId } = authorise(ctx, tokens);
  const type = (ctx.get('Content-Type') || '').split(';')[0].trim().toLowerCase();
  if (type && !ACCEPTED_TYPES.has(type)) throw new UnsupportedMediaTypeError(UPLOAD_CONTENT_TYPE);
  const measured = await receiveSnapshotUpload(stores, orgId, id, {
    stream: ctx.req,
    declaredBytes: Number(ctx.get('Content-Length') || NaN),
    // The rest of a refused upload is not read; closing the connection stops the client sending it.
    abandon: () => ctx.set('Connection', 'close'),
  });
  return { source_snapshot_id: id, status: 'pending_upload', received_bytes: measured.size_bytes, sha256: measured.sha256 };
}
