import type { IncomingMessage } from 'node:http';
import busboy from 'busboy';
import type { FilePart } from '../../../../app/files/store-blob.js';
import { InvalidRequestError, PayloadTooLargeError, UnsupportedMediaTypeError } from '../../../../domain/errors.js';
import { withoutRefused } from '../../../../domain/name-text.js';

/** Multipart framing allowance on top of the file itself when judging a declared Content-Length. */
const FRAMING_SLACK = 64 * 1024;

export function isMultipart(contentType: string | undefined): boolean {
  return (contentType ?? '').split(';')[0].trim().toLowerCase() === 'multipart/form-data';
}

/**
 * Leaf name: whatever follows the last `/` or `\`, without the characters names may not hold (a right-to-left
 * override turns `invoice\u202Efdp.exe` into "invoiceexe.pdf" on screen); never empty, `.` or `..`.
 */
export function leafName(raw: string | undefined): string {
  const parts = (raw ?? '').split(/[\\/]/);
  const leaf = withoutRefused(parts[parts.length - 1] ?? '').trim().slice(0, 255);
  return leaf === '' || leaf === '.' || leaf === '..' ? 'file' : leaf;
}

/**
 * Parses a multipart/form-data request and calls `consume` with the part named
 * `field` as soon as its headers arrive, so the file streams straight through
 * and nothing buffers it whole. Other parts are skipped. Resolves with what
 * `consume` returned once the whole request has been read; if the request
 * fails after `consume` finished, `undo` runs before the promise rejects.
 */
export function receiveFile<T>(
  req: IncomingMessage,
  field: string,
  maxBytes: number,
  consume: (part: FilePart) => Promise<T>,
  undo: (value: T) => Promise<void>,
): Promise<T> {
  if (!isMultipart(req.headers['content-type'])) throw new UnsupportedMediaTypeError('multipart/form-data');
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (declared > maxBytes + FRAMING_SLACK) throw new PayloadTooLargeError(`The upload is ${declared} bytes; files may be at most ${maxBytes} bytes.`, 'file_too_large');
  let bb: busboy.Busboy;
  try {
    // No busboy fileSize limit: it would silently truncate; the caller counts and refuses instead.
    bb = busboy({ headers: req.headers, preservePath: true, limits: { files: 1, fields: 20, parts: 40, fieldSize: 64 * 1024 } });
  } catch (err) {
    throw new InvalidRequestError(`Malformed multipart request: ${(err as Error).message}`, undefined, 'malformed_multipart');
  }
  return new Promise<T>((resolve, reject) => {
    let result: Promise<T> | null = null;
    let settled = false;
    // A failure after the file part was consumed (e.g. the request runs on too long) undoes it before answering.
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      stopWatching();
      req.unpipe(bb);
      req.pause();
      // Ends a file part still being consumed, so `consume` settles instead of waiting for data that will not come.
      bb.destroy(err instanceof Error ? err : new Error(String(err)));
      const consumed = result ?? Promise.reject(err);
      consumed.then(undo, () => undefined).then(() => reject(err), () => reject(err));
    };
    const stopWatching = watchRequest(req, maxBytes + FRAMING_SLACK, fail);
    bb.on('file', (name, stream, info) => {
      if (name !== field || result) return void stream.resume();
      result = consume({ filename: leafName(info.filename), mimeType: info.mimeType, stream });
      result.catch(fail);
    });
    bb.on('close', () => {
      if (!result) return fail(new InvalidRequestError(`The multipart form field "${field}" is required.`, field, 'file_required'));
      result.then((value) => {
        if (settled) return;
        settled = true;
        stopWatching();
        resolve(value);
      }, fail);
    });
    bb.on('error', (err: Error) => fail(new InvalidRequestError(`Malformed multipart request: ${err.message}`, undefined, 'malformed_multipart')));
    req.pipe(bb);
  });
}

/**
 * Fails the upload when the client goes away, the socket errors, or the
 * request as a whole passes `limit` (so parts after the file cannot stream
 * on forever). Returns a function that stops watching.
 */
function watchRequest(req: IncomingMessage, limit: number, fail: (err: Error) => void): () => void {
  let total = 0;
  const onData = (chunk: Buffer) => {
    total += chunk.length;
    if (total > limit) fail(new PayloadTooLargeError(`The upload is larger than the file limit plus form overhead.`, 'file_too_large'));
  };
  const onAborted = () => fail(new InvalidRequestError('The upload was aborted by the client.', undefined, 'body_aborted'));
  const onClose = () => {
    if (!req.complete) onAborted();
  };
  const onError = (err: Error) => fail(new InvalidRequestError(`The upload could not be read: ${err.message}`, undefined, 'body_read_error'));
  req.on('data', onData);
  req.on('aborted', onAborted);
  req.on('close', onClose);
  req.on('error', onError);
  return () => {
    req.off('data', onData);
    req.off('aborted', onAborted);
    req.off('close', onClose);
    req.off('error', onError);
  };
}
