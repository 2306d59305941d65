import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { InvalidRequestError, PayloadTooLargeError, UnsupportedContentEncodingError, UnsupportedMediaTypeError } from '../../../domain/errors.js';
import { JsonTooDeepError, MAX_JSON_DEPTH } from '../../../domain/json-depth.js';
import { parseWellFormed } from '../../../domain/well-formed.js';
import { check } from '../../../lib/schemas/validator.js';
import type { Ctx, JsonBody } from '../types.js';

/** True when the request carries a body at all (a length above zero, or chunked). */
export function hasBody(req: IncomingMessage): boolean {
  const len = req.headers['content-length'];
  if (len !== undefined) return Number(len) > 0;
  return req.headers['transfer-encoding'] !== undefined;
}

export function isJsonType(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const mime = contentType.split(';')[0].trim().toLowerCase();
  return mime === 'application/json' || (mime.startsWith('application/') && mime.endsWith('+json'));
}

/**
 * Request bodies are taken as sent (identity) only: a compressed body was
 * parsed as if plain (a gzip JSON body was a 400 malformed_json, a plain one
 * labelled br a 201). Refused rather than inflated, so the body limit stays a
 * limit on what is parsed and no request can make the server inflate a bomb
 * (and an upload is not stored still encoded). Checked once, where a body is
 * first accepted: the route table for every base-API route that takes one,
 * and the router's readBody for routed calls.
 */
export function refuseContentEncoding(headers: IncomingHttpHeaders): void {
  const enc = headers['content-encoding']?.trim();
  if (enc && enc.toLowerCase() !== 'identity') throw new UnsupportedContentEncodingError(enc);
}

/**
 * A JSON body's value, every string well formed (see src/domain/well-formed.ts):
 * a lone surrogate escape becomes U+FFFD here, once, for every route of both
 * ingresses. Nesting is bounded here too (MAX_JSON_DEPTH), before anything
 * walks the value: the router's translation and every JSON.stringify after it
 * overflowed the stack on a 20 KB body 10,000 levels deep (a 500).
 */
export function parseJsonText(raw: Buffer): unknown {
  try {
    return parseWellFormed(raw.toString('utf8'), MAX_JSON_DEPTH);
  } catch (e) {
    if (e instanceof JsonTooDeepError) throw new InvalidRequestError(`Request body ${e.message}.`, undefined, 'json_too_deep');
    throw new InvalidRequestError(`Request body is not valid JSON: ${(e as Error).message}`, undefined, 'malformed_json');
  }
}

/** An empty body (an optional one) reads as undefined, which no JSON text parses to. */
function parseJsonOrEmpty(raw: Buffer): unknown {
  return raw.length === 0 ? undefined : parseJsonText(raw);
}

/**
 * A JSON body's value, in the order every JSON body is taken in, the base
 * API's and the router's: its media type, then its bytes up to `limit`, then
 * its JSON. Its Content-Encoding was refused before, where the body was first
 * accepted. `emptyOk`: an empty body resolves undefined instead of failing to
 * parse. The parse runs where the read ends, so a caller waits on one promise.
 */
export function readJson(req: IncomingMessage, limit: number, emptyOk = false): Promise<unknown> {
  if (!isJsonType(req.headers['content-type'])) throw new UnsupportedMediaTypeError('application/json');
  return readRaw(req, limit, emptyOk ? parseJsonOrEmpty : parseJsonText);
}

/**
 * Reads the whole body and hands it to `parse`, refusing it with 413 as soon
 * as it passes `limit` (before reading at all when Content-Length already
 * says so).
 */
function readRaw<T>(req: IncomingMessage, limit: number, parse: (raw: Buffer) => T): Promise<T> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (declared > limit) {
    req.resume();
    return Promise.reject(new PayloadTooLargeError(`Request body is ${declared} bytes; the limit is ${limit}.`));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (err: Error | null, raw?: Buffer) => {
      if (done) return;
      done = true;
      req.off('data', onData);
      if (err) {
        req.resume();
        return reject(err);
      }
      try {
        resolve(parse(raw!));
      } catch (e) {
        reject(e);
      }
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) return finish(new PayloadTooLargeError(`Request body exceeds the limit of ${limit} bytes.`));
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => finish(null, Buffer.concat(chunks, size)));
    req.once('error', (e) => finish(new InvalidRequestError(`Request body could not be read: ${e.message}`, undefined, 'body_read_error')));
    req.once('aborted', () => finish(new InvalidRequestError('Request body was aborted by the client.', undefined, 'body_aborted')));
  });
}

/** Parses and validates a JSON request body into `ctx.state.body`. */
export async function parseJsonBody(ctx: Ctx, spec: JsonBody, limit: number): Promise<void> {
  if (!hasBody(ctx.req)) {
    if (spec.optional) {
      ctx.state.body = check(spec.schema, {});
      return;
    }
    throw new InvalidRequestError('A JSON request body is required.', undefined, 'body_required');
  }
  const value = await readJson(ctx.req, limit, spec.optional);
  ctx.state.body = check(spec.schema, value === undefined ? {} : value);
}
