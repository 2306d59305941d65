import type { Readable } from 'node:stream';
import { NotFoundError } from '../../domain/errors.js';
import type { FileDoc } from '../../domain/views/file.js';
import type { Stores } from '../../store/stores.js';
import { storeBlob, type FilePart } from './store-blob.js';

/**
 * The file use cases behind `/v1/files` (spec: Files). Each throws the domain
 * error the client sees; the route parses the request and shapes the answer.
 */

/**
 * The transport's reader of an upload: it hands the one file part to `store`
 * as soon as the part starts (so the bytes stream through), resolves with
 * what `store` returned once the request is read in full, and runs `undo` on
 * it if the request fails after `store` finished.
 */
export type FileReceiver = (store: (part: FilePart) => Promise<FileDoc>, undo: (stored: FileDoc) => Promise<void>) => Promise<FileDoc>;

/** `POST /v1/files`: the bytes first, the record last, so a refused request never leaves a file a client could see. */
export async function uploadFile(stores: Pick<Stores, 'files' | 'blobs'>, orgId: string, maxBytes: number, receive: FileReceiver): Promise<FileDoc> {
  const doc = await receive(
    (part) => storeBlob(stores.blobs, orgId, part, maxBytes),
    (stored) => stores.blobs.delete('files', stored._id),
  );
  return stores.files.insert(doc);
}

export async function readFile(files: Pick<Stores['files'], 'get'>, orgId: string, id: string): Promise<FileDoc> {
  const doc = await files.get(orgId, id);
  if (!doc) throw new NotFoundError('file', id);
  return doc;
}

/** `GET /v1/files/{id}/content`: the record (for the headers) and its bytes as a stream. */
export async function openFileContent(stores: Pick<Stores, 'files' | 'blobs'>, orgId: string, id: string): Promise<{ doc: FileDoc; content: Readable }> {
  const doc = await readFile(stores.files, orgId, id);
  return { doc, content: stores.blobs.download('files', doc._id) };
}

/** `DELETE /v1/files/{id}`: record first; once it is gone nobody can reach the blob, so a crash in between leaves only an orphan blob. */
export async function deleteFile(stores: Pick<Stores, 'files' | 'blobs'>, orgId: string, id: string): Promise<void> {
  const doc = await readFile(stores.files, orgId, id);
  if (!(await stores.files.delete(doc.org_id, doc._id))) throw new NotFoundError('file', doc._id);
  await stores.blobs.delete('files', doc._id);
}
