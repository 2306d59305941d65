import { UploadTokens } from '../../../../app/agents/upload-token.js';
import { deleteSnapshot, finalizeSnapshot, readSnapshot, reserveSnapshot } from '../../../../app/source-snapshots/source-snapshots.js';
import { snapshotMetadata, type SnapshotDoc, type SnapshotMetadata } from '../../../../store/snapshots.js';
import type { AppDeps } from '../../deps.js';
import { requireAuth, type RouteSpec } from '../../types.js';
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
        const { doc, token } = await reserveSnapshot(stores, tokens, config.uploadTtlSeconds, orgId, body);
        return {
          source_snapshot_id: doc._id,
          upload_url: `${config.publicUrl}/v1/source-snapshots/${doc._id}/upload`,
          upload_headers: { 'Content-Type': UPLOAD_CONTENT_TYPE, [UPLOAD_TOKEN_HEADER]: token },
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
      handler: async (ctx) => snapshotView(await finalizeSnapshot(stores, requireAuth(ctx).orgId, ctx.params.source_snapshot_id)),
    },
    {
      method: 'GET',
      path: '/v1/source-snapshots/{source_snapshot_id}',
      summary: 'Read a source snapshot.',
      tag: 'source-snapshots',
      response: snapshotResponse,
      handler: async (ctx) => snapshotView(await readSnapshot(stores.snapshots, requireAuth(ctx).orgId, ctx.params.source_snapshot_id)),
    },
    {
      method: 'DELETE',
      path: '/v1/source-snapshots/{source_snapshot_id}',
      summary: 'Delete a snapshot no version references, with its archive.',
      errors: [409],
      tag: 'source-snapshots',
      status: 204,
      handler: async (ctx) => {
        await deleteSnapshot(stores, requireAuth(ctx).orgId, ctx.params.source_snapshot_id);
        return undefined;
      },
    },
  ];
}
