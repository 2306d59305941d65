import { UploadTokens } from '../../../../app/agents/upload-token.js';
import { ConflictError, NotFoundError } from '../../../../domain/errors.js';
import { newId } from '../../../../domain/ids.js';
import { snapshotMetadata, type SnapshotDoc, type SnapshotMetadata } from '../../../../store/snapshots.js';
import type { AppDeps } from '../../deps.js';
import { requireAuth, type RouteSpec } from '../../types.js';
import { verdictFor } from './finalize.js';
import { reservationResponse, reserveBody, snapshotResponse, uploadResponse } from './schema.js';
import { handleUpload, UPLOAD_CONTENT_TYPE, UPLOAD_TOKEN_HEADER } from './upload.js';

export function snapshotView(doc: SnapshotDoc): Record<string, unknown> {
  return {
    source_snapshot_id: doc._id,
    status: doc.status,
    failure_reason: doc.failure_reason,
    format: doc.format,
    sha256: doc.sha256,
    size_bytes: doc.size_bytes,
    metadata: snapshotMetadata(doc),
    expires_at: doc.expires_at.toISOString(),
    created_at: doc.created_at.toISOString(),
  };
}

/** Source snapshots: reserve an upload target, upload to it with its token, finalize, delete while unattached. */
export function sourceSnapshotRoutes({ config, stores }: AppDeps): RouteSpec[] {
  const tokens = new UploadTokens(config.masterKeys, config.masterKeyId);
  const load = async (orgId: string, id: string): Promise<SnapshotDoc> => {
    const doc = await stores.snapshots.get(orgId, id);
    if (!doc) throw new NotFoundError('source_snapshot', id);
    return doc;
  };
  return [
    {
      method: 'POST',
      path: '/v1/source-snapshots',
      summary: 'Reserve a source snapshot and an upload target.',
      tag: 'source-snapshots',
      body: { schema: reserveBody },
      status: 201,
      response: reservationResponse,
      handler: async (ctx) => {
        const { orgId } = requireAuth(ctx);
        const body = ctx.state.body as { sha256: string; size_bytes: number; metadata?: SnapshotMetadata };
        const id = newId('snapshot');
        const exp = Math.floor(Date.now() / 1000) + config.uploadTtlSeconds;
        const doc = await stores.snapshots.reserve(orgId, id, { sha256: body.sha256, size_bytes: body.size_bytes, metadata: body.metadata ?? {} }, new Date(exp * 1000));
        return {
          source_snapshot_id: id,
          upload_url: `${config.publicUrl}/v1/source-snapshots/${id}/upload`,
          upload_headers: { 'Content-Type': UPLOAD_CONTENT_TYPE, [UPLOAD_TOKEN_HEADER]: tokens.sign({ snapshotId: id, orgId, exp }) },
          expires_at: doc.expires_at.toISOString(),
          status: doc.status,
        };
      },
    },
    {
      method: 'PUT',
      path: '/v1/source-snapshots/{source_snapshot_id}/upload',
      summary: 'Upload the archive; authorised by the X-Upload-Token from the reservation, not the API key.',
      tag: 'source-snapshots',
      auth: 'custom',
      customAuth: 'uploadToken',
      // 403: the upload target expired (upload_expired).
      errors: [403, 409],
      rawBody: { contentType: UPLOAD_CONTENT_TYPE, description: 'The .tar.gz archive, exactly size_bytes long.' },
      response: uploadResponse,
      handler: (ctx) => handleUpload(ctx, stores, tokens),
    },
    {
      method: 'POST',
      path: '/v1/source-snapshots/{source_snapshot_id}/finalize',
      summary: 'Verify the uploaded archive against the reservation.',
      errors: [409],
      tag: 'source-snapshots',
      response: snapshotResponse,
      handler: async (ctx) => {
        const { orgId } = requireAuth(ctx);
        const doc = await load(orgId, ctx.params.source_snapshot_id);
        if (doc.status !== 'pending_upload') return snapshotView(doc);
        if (doc.upload_lease && doc.upload_lease.until > new Date()) {
          throw new ConflictError('An upload to this snapshot is still in progress; finalize after it completes.', 'upload_in_progress');
        }
        const verdict = await verdictFor(stores, doc);
        if (verdict.status === 'failed') await stores.blobs.delete('snapshots', doc._id);
        return snapshotView((await stores.snapshots.finalize(orgId, doc._id, verdict)) ?? doc);
      },
    },
    {
      method: 'GET',
      path: '/v1/source-snapshots/{source_snapshot_id}',
      summary: 'Read a source snapshot.',
      tag: 'source-snapshots',
      response: snapshotResponse,
      handler: async (ctx) => snapshotView(await load(requireAuth(ctx).orgId, ctx.params.source_snapshot_id)),
    },
    {
      method: 'DELETE',
      path: '/v1/source-snapshots/{source_snapshot_id}',
      summary: 'Delete a snapshot no version references, with its archive.',
      errors: [409],
      tag: 'source-snapshots',
      status: 204,
      handler: async (ctx) => {
        const { orgId } = requireAuth(ctx);
        const id = ctx.params.source_snapshot_id;
        const outcome = await stores.snapshots.deleteUnattached(orgId, id);
        if (outcome === 'missing') throw new NotFoundError('source_snapshot', id);
        if (outcome === 'attached') throw new ConflictError(`Source snapshot ${id} is attached to an agent version and is immutable.`, 'snapshot_attached');
        await stores.blobs.delete('snapshots', id);
        return undefined;
      },
    },
  ];
}
