import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';

export interface WholeAnswer {
  statusCode: number;
  headers: IncomingHttpHeaders;
  text: string;
}

const origins = new Map<string, { origin: string; path: string }>();

/** `https://host:port/base` + path → undici's origin and path; a handful of endpoints, so kept. */
function split(url: string): { origin: string; path: string } {
  let hit = origins.get(url);
  if (!hit) {
    const u = new URL(url);
    hit = { origin: u.origin, path: u.pathname + u.search };
    if (origins.size >= 1000) origins.clear();
    origins.set(url, hit);
  }
  return hit;
}

/**
 * A POST whose answer is read whole, straight from undici's dispatch
 * callbacks into one buffer. undici's `request()` wraps every answer in a
 * Readable stream and consumes it with stream events, which showed in the
 * router's profile for answers that are only ever read whole. Aborting the
 * signal rejects with its reason, as `request()` does.
 */
export function postForWhole(dispatcher: Dispatcher, url: string, headers: Record<string, string>, body: string, signal?: AbortSignal): Promise<WholeAnswer> {
  const { origin, path } = split(url);
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    let controller: Dispatcher.DispatchController | undefined;
    let statusCode = 0;
    let resHeaders: IncomingHttpHeaders = {};
    let chunks: Buffer[] = [];
    const onAbort = () => controller?.abort(signal!.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    const settle = () => signal?.removeEventListener('abort', onAbort);
    dispatcher.dispatch(
      { origin, path, method: 'POST', headers, body },
      {
        onRequestStart(c) {
          controller = c;
        },
        onResponseStart(_c, status, h) {
          // 1xx answers come first on the same request; only the final one's body is kept.
          statusCode = status;
          resHeaders = h;
          chunks = [];
        },
        onResponseData(_c, chunk) {
          chunks.push(chunk);
        },
        onResponseEnd() {
          settle();
          resolve({ statusCode, headers: resHeaders, text: Buffer.concat(chunks).toString('utf8') });
        },
        onResponseError(_c, err) {
          settle();
          reject(signal?.aborted ? signal.reason : err);
        },
      },
    );
  });
}
