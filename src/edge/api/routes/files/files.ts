import { deleteFile, openFileContent, readFile, uploadFile } from '../../../../app/files/files.js';
import { fileView } from '../../../../domain/views/file.js';
import type { AppDeps } from '../../deps.js';
import { pageOf, requestedPage } from '../../pagination.js';
import { requireAuth, type RouteSpec } from '../../types.js';
import { contentDisposition } from './disposition.js';
import { receiveFile } from './multipart.js';
import { uploadFileForm, fileListResponse, fileResponse } from './schema.js';

/** Uploaded files (spec: Files), referenced later by `file_id` in content blocks. */
export function fileRoutes({ stores, config }: AppDeps): RouteSpec[] {
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
          return fileView(await uploadFile(stores, orgId, config.maxFileBytes, (store, undo) => receiveFile(ctx.req, 'file', config.maxFileBytes, store, undo)));
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
      handler: async (ctx) => fileView(await readFile(stores.files, requireAuth(ctx).orgId, ctx.params.file_id)),
    },
    {
      method: 'GET',
      path: '/v1/files/{file_id}/content',
      summary: 'Download a file\u2019s bytes.',
      tag: 'files',
      // Served with the file's own content type (whatever was uploaded), so any media type may come back.
      responseContent: { '*/*': { type: 'string', format: 'binary', description: 'The bytes, served with the file\u2019s own content type and an attachment Content-Disposition.' } },
      handler: async (ctx) => {
        const { doc, content } = await openFileContent(stores, requireAuth(ctx).orgId, ctx.params.file_id);
        ctx.status = 200;
        ctx.type = doc.content_type;
        ctx.length = doc.size_bytes;
        ctx.set('Content-Disposition', contentDisposition(doc.filename));
        ctx.set('X-Content-Type-Options', 'nosniff');
        ctx.body = content;
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
        await deleteFile(stores, requireAuth(ctx).orgId, ctx.params.file_id);
        return undefined;
      },
    },
  ];
}
