import { apiError, TroupeConnectionError } from './errors.js';
import { OPERATIONS, type OperationId, type Operations } from './generated/api.js';
import { isReplayable, retryDelayMs } from './retry.js';

export interface ClientOptions {
  /** The API's base URL, e.g. http://localhost:8080. */
  baseUrl: string;
  apiKey: string;
  /** A fetch implementation; the global one by default. */
  fetch?: typeof fetch;
  /** Per-request timeout for ordinary calls (not streams or sync waits), in ms. */
  timeoutMs?: number;
  /**
   * Retries of a call that failed in a way worth retrying (default 2; 0 turns retries off): no answer,
   * 5xx or a repeat still in flight for calls that are safe to send twice (GET, PUT, DELETE, and
   * POSTs with an idempotency key), and 429 for any call, after its Retry-After of up to 10 s.
   */
  maxRetries?: number;
}

export interface CallOptions {
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Overrides the client's timeout; 0 means none. */
  timeoutMs?: number;
  /** Extra query parameters the schema cannot name, such as `metadata.<key>`. */
  extraQuery?: Record<string, string>;
  /** The call is safe to send twice though its method is POST (its body carries an idempotency key). */
  idempotent?: boolean;
}

export type Args<K extends OperationId> = (Operations[K]['pathParams'] extends Record<string, never> ? { path?: undefined } : { path: Operations[K]['pathParams'] }) & {
  query?: Operations[K]['query'];
} & (Operations[K]['body'] extends undefined ? { body?: undefined } : { body: Operations[K]['body'] });

/** The answer of a call whose status matters (sync answers 202 past its wait bound). */
export interface Answer<T> {
  status: number;
  data: T;
  headers: Headers;
}

/** HTTP over fetch for every operation of the generated table; works in Node 20+ and browsers. */
export class Transport {
  readonly baseUrl: string;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly opts: ClientOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.fetchImpl = opts.fetch ?? ((...a) => fetch(...a));
  }

  url(op: OperationId, path: Record<string, string> | undefined, query?: Record<string, unknown>, extra?: Record<string, string>): string {
    const template: string = OPERATIONS[op].path;
    const filled = template.replace(/\{([A-Za-z0-9_]+)\}/g, (_, name: string) => {
      const v = path?.[name];
      if (v === undefined || v === '') throw new TypeError(`${op}: path parameter ${name} is required`);
      return encodeURIComponent(v);
    });
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries({ ...query, ...extra })) if (v !== undefined && v !== null) qs.set(k, String(v));
    const s = qs.toString();
    return `${this.baseUrl}${filled}${s ? `?${s}` : ''}`;
  }

  /** fetch with the key, a timeout, and network failures as TroupeConnectionError. */
  async raw(url: string, init: RequestInit & { timeoutMs?: number; duplex?: 'half'; noAuth?: boolean }): Promise<Response> {
    const headers = new Headers(init.headers);
    // noAuth: an upload_url carries its own token; the API key goes to the API only.
    if (!init.noAuth && !headers.has('Authorization')) headers.set('Authorization', `Bearer ${this.opts.apiKey}`);
    const timeoutMs = init.timeoutMs ?? this.opts.timeoutMs ?? 30_000;
    const signals = [init.signal, timeoutMs > 0 ? AbortSignal.timeout(timeoutMs) : undefined].filter((s): s is AbortSignal => !!s);
    try {
      return await this.fetchImpl(url, { ...init, headers, signal: signals.length ? AbortSignal.any(signals) : undefined });
    } catch (err) {
      if (init.signal?.aborted) throw err;
      throw new TroupeConnectionError(`cannot reach ${new URL(url).origin}: ${describe(err)}`, err);
    }
  }

  async call<K extends OperationId>(op: K, args: Args<K>, options: CallOptions = {}): Promise<Answer<Operations[K]['response']>> {
    const { method } = OPERATIONS[op];
    const a = args as { path?: Record<string, string>; query?: Record<string, unknown>; body?: unknown };
    const headers: Record<string, string> = { Accept: 'application/json', ...options.headers };
    let body: RequestInit['body'];
    if (a.body !== undefined) {
      const binary = a.body instanceof Uint8Array || a.body instanceof ArrayBuffer || a.body instanceof FormData || a.body instanceof ReadableStream || (typeof Blob !== 'undefined' && a.body instanceof Blob);
      body = binary ? (a.body as RequestInit['body']) : JSON.stringify(a.body);
      if (!binary) headers['Content-Type'] ??= 'application/json';
    }
    // Node's fetch streams a ReadableStream body only in half-duplex mode.
    const duplex = body instanceof ReadableStream ? { duplex: 'half' as const } : {};
    const url = this.url(op, a.path, a.query, options.extraQuery);
    const replayable = isReplayable(method, headers, body, options.idempotent);
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await this.raw(url, { method, headers, body, signal: options.signal, timeoutMs: options.timeoutMs, ...duplex });
        return { status: res.status, data: (await readBody(res)) as Operations[K]['response'], headers: res.headers };
      } catch (err) {
        const wait = attempt < (this.opts.maxRetries ?? 2) && !options.signal?.aborted ? retryDelayMs(err, attempt, replayable) : null;
        if (wait === null) throw err;
        await sleep(wait, options.signal);
      }
    }
  }
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });

/** The body of an answer: JSON or text on success; a typed error otherwise. */
export async function readBody(res: Response): Promise<unknown> {
  const text = await res.text();
  const json = /json/.test(res.headers.get('Content-Type') ?? '');
  let parsed: unknown = text;
  if (json && text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
  }
  if (!res.ok) throw apiError(res.status, parsed, res.headers.get('X-Request-Id'), res.headers.get('Retry-After'));
  return res.status === 204 || text === '' ? undefined : parsed;
}

export function describe(err: unknown): string {
  const e = err as { message?: string; cause?: { code?: string; message?: string } };
  return e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(err);
}
