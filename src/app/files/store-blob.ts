import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { PayloadTooLargeError } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import type { BlobStore } from '../../store/blobs.js';
import type { FileDoc } from '../../domain/views/file.js';

/** The one file part of an upload, handed over as a stream before any of it is read. */
export interface FilePart {
  filename: string;
  mimeType: string;
  stream: Readable;
}

const MIME = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$/;

/** The part's declared type when it is a plain `type/subtype`, else octet-stream; it is echoed on download. */
export function safeContentType(mime: string | undefined): string {
  const bare = (mime ?? '').split(';')[0].trim().toLowerCase();
  return MIME.test(bare) ? bare : 'application/octet-stream';
}

/**
 * Streams one file part into the blob store, counting as it goes, and returns the
 * record to write once the request has been read in full. Passing `maxBytes`
 * stops the upload at once with 413 and removes the partial blob.
 */
export async function storeBlob(blobs: BlobStore, orgId: string, part: FilePart, maxBytes: number): Promise<FileDoc> {
  const id = newId('file');
  const contentType = safeContentType(part.mimeType);
  const upload = blobs.upload('files', id, part.filename, { org_id: orgId, content_type: contentType });
  // Errors surface through write/finish below; this keeps one emitted between writes from crashing the process.
  upload.on('error', () => undefined);
  let size = 0;
  try {
    for await (const chunk of part.stream as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) throw new PayloadTooLargeError(`The file is larger than the limit of ${maxBytes} bytes.`, 'file_too_large');
      if (!upload.write(chunk)) await once(upload, 'drain');
    }
    upload.end();
    await finished(upload);
  } catch (err) {
    await discard(blobs, upload, id);
    throw err;
  }
  return { _id: id, org_id: orgId, filename: part.filename, content_type: contentType, size_bytes: size, created_at: new Date() };
}

/**
 * Removes a partial blob. The stream is ended first so every chunk write in
 * flight has landed before the delete; aborting instead could race a last
 * chunk insert and leave it behind.
 */
async function discard(blobs: BlobStore, upload: ReturnType<BlobStore['upload']>, id: string): Promise<void> {
  if (!upload.writableFinished && !upload.destroyed) {
    if (!upload.writableEnded) upload.end();
    await finished(upload).catch(() => undefined);
  }
  await blobs.delete('files', id);
}
