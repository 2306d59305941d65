import { ConflictError, NotFoundError } from '../../../../domain/errors.js';
import { newId } from '../../../../domain/ids.js';
import { StorageArea } from '../../../../app/storage-area.js';
import { isDuplicateKey } from '../../../../store/duplicate-key.js';
import { storageBindingView, type StorageBindingDoc } from '../../../../domain/views/storage-binding.js';
import type { AppDeps } from '../../deps.js';
import { pageOf, pathCursor, requestedPage } from '../../pagination.js';
import { requireAuth, type RouteSpec } from '../../types.js';
import { createStorageBindingBody, storageBindingListResponse, storageBindingResponse, storageFileListResponse } from './schema.js';

/** Storage bindings: named, persistent file areas mounted into the sandbox of a session's custom tools (docs/sessions.md). */
export function storageBindingRoutes({ stores }: AppDeps): RouteSpec[] {
  const bindings = stores.storageBindings;
  const area = new StorageArea(bindings, stores.blobs);
  const view = async (doc: StorageBindingDoc) => storageBindingView(doc, await bindings.sizesOf(doc.org_id, doc._id));
  const getOr404 = async (orgId: string, id: string) => {
    const doc = await bindings.live(orgId, id);
    if (!doc) throw new NotFoundError('storage_binding', id);
    return doc;
  };
  return [
    {
      method: 'POST',
      path: '/v1/storage-bindings',
      summary: 'Create a storage binding: a named, persistent file area for sessions.',
      errors: [409],
      tag: 'storage-bindings',
      body: { schema: createStorageBindingBody },
      status: 201,
      response: storageBindingResponse,
      handler: async (ctx) => {
        const { orgId } = requireAuth(ctx);
        const body = ctx.state.body as { name: string; description?: string | null };
        const doc: StorageBindingDoc = { _id: newId('storageBinding'), org_id: orgId, name: body.name, description: body.description ?? null, created_at: new Date(), deleting: false };
        try {
          await bindings.insert(doc);
        } catch (err) {
          if (isDuplicateKey(err)) throw new ConflictError(`A storage binding named ${JSON.stringify(body.name)} already exists.`, 'storage_binding_name_taken', 'name');
          throw err;
        }
        return storageBindingView(doc, []);
      },
    },
    {
      method: 'GET',
      path: '/v1/storage-bindings',
      summary: 'List storage bindings, oldest first.',
      tag: 'storage-bindings',
      list: { cursor: 'storageBinding' },
      response: storageBindingListResponse,
      handler: async (ctx) => {
        const { orgId } = requireAuth(ctx);
        const page = requestedPage(ctx);
        const { items, has_more, next_cursor } = pageOf((await bindings.list(orgId, page)).filter((b) => !b.deleting), page.limit, (b) => b._id);
        return { storage_bindings: await Promise.all(items.map(view)), has_more, next_cursor };
      },
    },
    {
      method: 'GET',
      path: '/v1/storage-bindings/{storage_binding_id}',
      summary: 'Read a storage binding, with its file count and total size.',
      tag: 'storage-bindings',
      response: storageBindingResponse,
      handler: async (ctx) => view(await getOr404(requireAuth(ctx).orgId, ctx.params.storage_binding_id)),
    },
    {
      method: 'GET',
      path: '/v1/storage-bindings/{storage_binding_id}/files',
      summary: 'List the files tools have left in a storage binding, in path order; the cursor is a path.',
      tag: 'storage-bindings',
      list: { cursor: 'path' },
      response: storageFileListResponse,
      handler: async (ctx) => {
        const { orgId } = requireAuth(ctx);
        const doc = await getOr404(orgId, ctx.params.storage_binding_id);
        const page = requestedPage(ctx);
        const { items, has_more, next_cursor } = pageOf(await bindings.filesPage(orgId, doc._id, page), page.limit, (f) => pathCursor(f.path));
        return { files: items.map((f) => ({ path: f.path, size_bytes: f.size_bytes, sha256: f.sha256, updated_at: f.updated_at.toISOString() })), has_more, next_cursor };
      },
    },
    {
      method: 'DELETE',
      path: '/v1/storage-bindings/{storage_binding_id}',
      summary: 'Delete a storage binding and its files; 409 while sessions use it.',
      errors: [409],
      tag: 'storage-bindings',
      status: 204,
      handler: async (ctx) => {
        const { orgId } = requireAuth(ctx);
        const id = ctx.params.storage_binding_id;
        // Claim first, so no new session can bind it while we count the ones that do.
        const claimed = await bindings.markDeleting(orgId, id);
        if (!claimed) throw new NotFoundError('storage_binding', id);
        const users = await stores.sessions.usingStorage(orgId, id, 3);
        if (users.length > 0) {
          await bindings.unmarkDeleting(orgId, id);
          throw new ConflictError(`Storage binding ${id} is used by sessions (${users.join(', ')}${users.length === 3 ? ', …' : ''}); delete them first.`, 'storage_binding_in_use');
        }
        await area.purge(orgId, id);
        await bindings.remove(orgId, id);
        return undefined;
      },
    },
  ];
}
