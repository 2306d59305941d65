import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import { upstreamTooLarge } from './errors.js';

/**
 * What an upstream call needs of its caller's cancellation. An AbortSignal is
 * one; the router passes a lighter one of its own (ClientGone, src/lib/routing/exchange.ts):
 * an AbortController per call, with its listener, was a measurable share of a
 * routed call's CPU, and the router only ever needs it when the client leaves.
 */
export interface Cancel {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** Where a POST goes, as undici's dispatcher takes it. */
export interface PostTarget {
  origin: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}

export interface WholeAnswer {
  statusCode: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/** An answer whose body is still arriving: read it chunk by chunk, or whole (error bodies), or close it. */
export interface StreamingAnswer {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: ChunkQueue;
}

/**
 * Bytes the queue holds before it pauses the upstream answer, and at or below which it resumes it. Counted in
 * bytes, not chunks: undici hands over one chunk per HTTP chunk of the answer, and providers write one per
 * event, often 100-200 bytes. The gap between the two is what keeps the router's memory bounded. On resume,
 * undici's parser takes everything its socket has buffered, parses until the queue pauses it again, and puts
 * the rest back; meanwhile the socket reads one more kernel read (up to 64 KiB). If a resume-to-pause cycle
 * takes in less than that, the socket's buffer grows by the difference on every cycle and each resume copies
 * all of it: with the earlier mark (pause at 64 chunks, resume under 32) a 1 KiB-per-event stream to a slow
 * client grew it to 15 MB and spent most of the router's time copying it (test/integration/router-backpressure).
 */
const HIGH_WATER_BYTES = 256 * 1024;
const LOW_WATER_BYTES = 32 * 1024;

/**
 * The body of a streaming answer, filled from undici's dispatch callbacks. One
 * promise per read, and none when chunks are waiting: a Readable and its async
 * iterator cost each chunk several more, and a routed stream relays every one.
 */
export class ChunkQueue {
  /** Waiting chunks from `head` on; taken ones are dropped in batches, so a long queue costs no shift() per read. */
  private chunks: Buffer[] = [];
  private head = 0;
  private bytes = 0;
  private waiter: { resolve: (c: Buffer | null) => void; reject: (e: unknown) => void } | null = null;
  private ended = false;
  private failure: unknown = null;
  controller: Dispatcher.DispatchController | undefined;

  /** The next chunk, or null once the body has ended; rejects if the answer failed. */
  read(): Promise<Buffer | null> {
    const next = this.poll();
    if (next) return Promise.resolve(next);
    if (this.failure) return Promise.reject(this.failure);
    if (this.ended) return Promise.resolve(null);
    return new Promise((resolve, reject) => (this.waiter = { resolve, reject }));
  }

  /**
   * A chunk that is already waiting, or null when none is (whatever comes later): a reader takes every chunk
   * of one socket read this way after awaiting the first, instead of a promise each.
   */
  poll(): Buffer | null {
    if (this.head >= this.chunks.length) return null;
    const next = this.chunks[this.head++];
    this.bytes -= next.length;
    if (this.head === this.chunks.length) [this.chunks, this.head] = [[], 0];
    else if (this.head >= 1024) [this.chunks, this.head] = [this.chunks.slice(this.head), 0];
    if (this.controller?.paused && this.bytes <= LOW_WATER_BYTES) this.controller.resume();
    return next;
  }

  /** The rest of the body as text (for error answers), at most `maxBytes` of it: an error body is only quoted. */
  async text(maxBytes: number): Promise<string> {
    const parts: Buffer[] = [];
    let bytes = 0;
    for (let c = await this.read(); c && bytes < maxBytes; c = await this.read()) {
      parts.push(c);
      bytes += c.length;
    }
    this.close();
    return Buffer.concat(parts).subarray(0, maxBytes).toString('utf8');
  }

  /** Stops the upstream answer if it is still arriving. */
  close(): void {
    if (!this.ended && !this.failure) this.controller?.abort(new Error('answer closed by its reader'));
    this.ended = true;
  }

  push(chunk: Buffer): void {
    if (this.waiter) return void this.take().resolve(chunk);
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    if (this.bytes >= HIGH_WATER_BYTES) this.controller?.pause();
  }

  end(): void {
    this.ended = true;
    this.waiter && this.take().resolve(null);
  }

  fail(err: unknown): void {
    if (this.ended) return;
    this.failure = err;
    this.waiter && this.take().reject(err);
  }

  private take(): NonNullable<ChunkQueue['waiter']> {
    const w = this.waiter!;
    this.waiter = null;
    return w;
  }
}

interface Sink {
  start(status: number, headers: IncomingHttpHeaders): void;
  data(chunk: Buffer): void;
  end(): void;
  error(err: unknown): void;
}

/**
 * A POST through undici's dispatch callbacks, with the caller's cancellation
 * wired in: cancelling rejects or fails the answer with the cancellation's
 * reason, as undici's `request()` does.
 */
function dispatchPost(dispatcher: Dispatcher, t: PostTarget, cancel: Cancel | undefined, sink: Sink, onController?: (c: Dispatcher.DispatchController) => void): void {
  if (cancel?.aborted) return sink.error(cancel.reason);
  let controller: Dispatcher.DispatchController | undefined;
  const onAbort = () => controller?.abort(cancel!.reason as Error);
  cancel?.addEventListener('abort', onAbort, { once: true });
  const done = () => cancel?.removeEventListener('abort', onAbort);
  dispatcher.dispatch(
    { origin: t.origin, path: t.path, method: 'POST', headers: t.headers, body: t.body },
    {
      onRequestStart(c) {
        controller = c;
        onController?.(c);
        // Cancelled before the request had a connection: nothing had a controller to abort yet.
        if (cancel?.aborted) c.abort(cancel.reason as Error);
      },
      onResponseStart(_c, status, headers) {
        sink.start(status, headers);
      },
      onResponseData(_c, chunk) {
        sink.data(chunk);
      },
      onResponseEnd() {
        done();
        sink.end();
      },
      onResponseError(_c, err) {
        done();
        sink.error(cancel?.aborted ? cancel.reason : err);
      },
    },
  );
}

/**
 * A POST whose answer is read whole, straight into one buffer: non-streaming answers are only ever read whole.
 * The base_url is tenant-supplied, so an answer past `maxBytes` stops the request and fails the call
 * (`upstream_response_too_large`) instead of being held.
 */
export function postWhole(dispatcher: Dispatcher, t: PostTarget, cancel: Cancel | undefined, maxBytes: number): Promise<WholeAnswer> {
  return new Promise((resolve, reject) => {
    let statusCode = 0;
    let headers: IncomingHttpHeaders = {};
    let chunks: Buffer[] = [];
    let bytes = 0;
    let controller: Dispatcher.DispatchController | undefined;
    let failed = false;
    dispatchPost(
      dispatcher,
      t,
      cancel,
      {
        start(status, h) {
          // 1xx answers come first on the same request; only the final one's body is kept.
          statusCode = status;
          headers = h;
          chunks = [];
          bytes = 0;
        },
        data(chunk) {
          if (failed) return;
          bytes += chunk.length;
          if (bytes <= maxBytes) return void chunks.push(chunk);
          failed = true;
          chunks = [];
          const err = upstreamTooLarge('answer', maxBytes);
          reject(err);
          controller?.abort(err);
        },
        end: () => resolve({ statusCode, headers, text: Buffer.concat(chunks).toString('utf8') }),
        error: reject,
      },
      (c) => (controller = c),
    );
  });
}

/** A POST whose answer is handed back once its status and headers are in, with the body to read as it arrives. */
export function postStreaming(dispatcher: Dispatcher, t: PostTarget, cancel?: Cancel): Promise<StreamingAnswer> {
  return new Promise((resolve, reject) => {
    const body = new ChunkQueue();
    let started = false;
    dispatchPost(
      dispatcher,
      t,
      cancel,
      {
        start(status, headers) {
          if (status < 200) return; // a 1xx: the final answer follows
          started = true;
          resolve({ statusCode: status, headers, body });
        },
        data: (chunk) => started && body.push(chunk),
        end: () => (started ? body.end() : reject(new Error('the upstream answered no final status'))),
        error: (err) => (started ? body.fail(err) : reject(err)),
      },
      (c) => (body.controller = c),
    );
  });
}
