import { TroupeApiError, TroupeConnectionError } from './errors.js';
import type { AssistantDelta, LedgerEvent } from './generated/api.js';
import { parseSse } from './sse.js';
import { readBody, type Transport } from './transport.js';

/** A ledger event, exactly as the stream and GET …/events carry it: narrowing on `type` types its `data`. */
export type SessionEvent = LedgerEvent;

/** The event of one type, e.g. `EventOf<'tool.call_requested'>['data']`. */
export type EventOf<T extends SessionEvent['type']> = Extract<SessionEvent, { type: T }>;

/** A live token delta (`?deltas=true`): ephemeral, never replayed on resume. */
export interface DeltaEvent {
  type: 'assistant.delta';
  data: AssistantDelta;
}

export type StreamItem = SessionEvent | DeltaEvent;

export interface StreamOptions {
  /** Resume after this event id (`<session>:<n>`) or sequence number; from the start by default. */
  after?: string | number;
  /** Also yield live assistant.delta records. */
  deltas?: boolean;
  signal?: AbortSignal;
  /** Reconnects in a row that bring no event (refused, cut, or ended at once) before giving up (default 20). */
  maxReconnects?: number;
  /**
   * First reconnect delay in ms (default 250) until the server sends its own (`retry:`); doubled, plus up to
   * half again at random, while connections keep ending within STABLE_STREAM_MS, up to maxReconnectDelayMs.
   */
  reconnectDelayMs?: number;
  /** Longest reconnect delay in ms before jitter (default 5000); a larger server `retry:` or Retry-After wins. */
  maxReconnectDelayMs?: number;
  /** Called each time a connection is open (the first and every resumed one), before its events. */
  onOpen?: (info: { lastEventId: string | null }) => void;
  /** Called before each reconnect, with the error and the id resumed from. */
  onReconnect?: (info: { attempt: number; lastEventId: string | null; error: unknown }) => void;
}

function sequenceOf(after: string | number | undefined): number {
  if (after === undefined) return 0;
  const m = /(\d+)$/.exec(String(after));
  return m ? Number(m[1]) : 0;
}

/** A connection that stayed open this long was healthy: the next reconnect starts again from the base delay. */
export const STABLE_STREAM_MS = 10_000;

/** Waits `ms`, or less if the signal aborts; leaves no listener on the signal either way (a long tail reconnects often). */
const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });

/**
 * The session's ledger as an async iterator that outlives dropped
 * connections: every reconnect sends `Last-Event-ID` with the last event
 * yielded, and anything at or below it is dropped, so the caller sees each
 * sequence number once and in order. Ends only when the caller stops
 * iterating, the signal aborts, the server refuses (4xx: thrown at once), or
 * `maxReconnects` reconnects in a row bring nothing.
 *
 * The pace follows the server: its `retry:` hint (sent before it ends streams
 * for a shutdown) becomes the base delay, and a 503's Retry-After is waited
 * out. Only a connection that stayed up STABLE_STREAM_MS resets the backoff:
 * one accepted and ended at once (a process shutting down) counts as a
 * failure, so many clients do not hammer it in step (the jitter spreads them).
 */
export async function* streamSession(transport: Transport, sessionId: string, opts: StreamOptions = {}): AsyncGenerator<StreamItem> {
  let lastSeq = sequenceOf(opts.after);
  let attempt = 0; // reconnects since the last healthy connection: sets the pace
  let fruitless = 0; // reconnects in a row that brought no event: decides giving up
  const max = opts.maxReconnects ?? 20;
  let baseDelay = opts.reconnectDelayMs ?? 250;
  const maxDelay = opts.maxReconnectDelayMs ?? 5000;
  const url = transport.url('getV1SessionsSessionIdStream', { session_id: sessionId }, opts.deltas ? { deltas: 'true' } : undefined);
  while (!opts.signal?.aborted) {
    const local = new AbortController();
    const onAbort = () => local.abort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    let error: unknown = new TroupeConnectionError('the stream ended');
    let openedAt = 0;
    let delivered = false;
    let retryAfterMs = 0;
    try {
      const headers: Record<string, string> = { Accept: 'text/event-stream' };
      if (lastSeq > 0) headers['Last-Event-ID'] = `${sessionId}:${lastSeq}`;
      const res = await transport.raw(url, { method: 'GET', headers, signal: local.signal, timeoutMs: 0 });
      if (!res.ok || !res.body) await readBody(res);
      openedAt = Date.now();
      opts.onOpen?.({ lastEventId: lastSeq ? `${sessionId}:${lastSeq}` : null });
      for await (const rec of parseSse(res.body!, (ms) => (baseDelay = ms))) {
        if (opts.signal?.aborted) return;
        if (rec.event === 'assistant.delta') {
          if (opts.deltas) yield { type: 'assistant.delta', data: safeJson(rec.data) as AssistantDelta };
          continue;
        }
        const ev = safeJson(rec.data) as SessionEvent;
        if (typeof ev?.sequence_number !== 'number' || ev.sequence_number <= lastSeq) continue;
        lastSeq = ev.sequence_number;
        delivered = true;
        yield ev;
      }
    } catch (err) {
      if (opts.signal?.aborted) return;
      // A refusal will not change by retrying (bad id, revoked key); a 5xx might.
      if (err instanceof TroupeApiError && err.status < 500 && err.status !== 429) throw err;
      if (err instanceof TroupeApiError && err.retryAfterSeconds !== undefined) retryAfterMs = err.retryAfterSeconds * 1000;
      error = err;
    } finally {
      opts.signal?.removeEventListener('abort', onAbort);
      local.abort();
    }
    if (opts.signal?.aborted) return;
    const stable = openedAt > 0 && Date.now() - openedAt >= STABLE_STREAM_MS;
    if (stable) attempt = 0;
    fruitless = stable || delivered ? 0 : fruitless + 1;
    if (fruitless > max) throw error instanceof Error ? error : new TroupeConnectionError(String(error));
    attempt++;
    opts.onReconnect?.({ attempt, lastEventId: lastSeq ? `${sessionId}:${lastSeq}` : null, error });
    const pace = Math.min(Math.max(maxDelay, baseDelay), baseDelay * 2 ** Math.min(attempt - 1, 20));
    await sleep(Math.max(retryAfterMs, pace + (Math.random() * pace) / 2), opts.signal);
  }
}

function safeJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}
