import { NotFoundError } from '../../../../domain/errors.js';
import { fileView, type FileDoc } from '../../../../domain/views/file.js';
import type { AppDeps } from '../../deps.js';
import { pageOf, requestedPage } from '../../pagination.js';
import { requireAuth, type Ctx, type RouteSpec } from '../../types.js';
import { contentDisposition } from './disposition.js';
import { receiveFile } from './multipart.js';
import { uploadFileForm, fileListResponse, fileResponse } from './schema.js';
import { storeBlob } from './upload.js';

/** Uploaded files (spec: Files), referenced later by `file_id` in content blocks. */
export function fileRoutes({ stores, config }: AppDeps): RouteSpec[] {
  const load = async (ctx: Ctx): Promise<FileDoc> => {
    const doc = await stores.files.get(requireAuth(ctx).orgId, ctx.params.file_id);
    if (!doc) throw new NotFoundError('file', ctx.params.file_id);
    return doc;
  };
  return [
    {
      method: 'POST',
      path: '/v1/files',
      summary: 'Upload a file (multipart/form-data, field "file").',
      tag: 'files',
      rawBody: { contentType: 'multipart/form-data', description: `Form field "file" (required); at most TROUPE_MAX_FILE_BYTES (${config.maxFileBytes}) bytes.`, schema: uploadFileForm },
      status: 201,
      response: fileResponse,
      handler: async (ctx) => {
        const { orgId } = requireAuth(ctx);
        try {
          const doc = await receiveFile(
            ctx.req,
            'file',
            config.maxFileBytes,
            (part) => storeBlob(stores.blobs, orgId, part, config.maxFileBytes),
            (stored) => stores.blobs.delete('files', stored._id),
          );
          // The record is written last, so a refused request never leaves a file a client could see.
          return fileView(await stores.files.insert(doc));
        } catch (err) {
          // The rest of a refused upload is not read; closing the connection stops the client sending it.
          if (!ctx.req.complete) ctx.set('Connection', 'close');
          throw err;
        }
      },
    },
    {
      method: 'GET',
      path: '/v1/files',
      summary: 'List uploaded files, oldest first.',
      tag: 'files',
      list: { cursor: 'file' },
      response: fileListResponse,
      handler: async (ctx) => {
        const { limit, after } = requestedPage(ctx);
        const rows = await stores.files.list(requireAuth(ctx).orgId, limit, after);
        const page = pageOf(rows, limit, (r) => r._id);
        return { files: page.items.map(fileView), has_more: page.has_more, next_cursor: page.next_cursor };
      },
    },
    {
      method: 'GET',
      path: '/v1/files/{file_id}',
      summary: 'A file\u2019s metadata.',
      tag: 'files',
      response: fileResponse,
      handler: async (ctx) => fileView(await load(ctx)),
    },
    {
      method: 'GET',
      path: '/v1/files/{file_id}/content',
      summary: 'Download a file\u2019s bytes.',
      tag: 'files',
      // Served with the file's own content type (whatever was uploaded), so any media type may come back.
      responseContent: { '*/*': { type: 'string', format: 'binary', description: 'The bytes, served with the file\u2019s own content type and an attachment Content-Disposition.' } },
      handler: async (ctx) => {
        const doc = await load(ctx);
        ctx.status = 200;
        ctx.type = doc.content_type;
        ctx.length = doc.size_bytes;
        ctx.set('Content-Disposition', contentDisposition(doc.filename));
        ctx.set('X-Content-Type-Options', 'nosniff');
        ctx.body = stores.blobs.download('files', doc._id);
        return undefined;
      },
    },
    {
      method: 'DELETE',
      path: '/v1/files/{file_id}',
      summary: 'Delete a file and its bytes.',
      tag: 'files',
      status: 204,
      handler: async (ctx) => {
        const doc = await load(ctx);
        // Record first: once it is gone nobody can reach the blob, so a crash in between leaves only an orphan blob.
        if (!(await stores.files.delete(doc.org_id, doc._id))) throw new NotFoundError('file', doc._id);
        await stores.blobs.delete('files', doc._id);
        return undefined;
      },
    },
  ];
}
