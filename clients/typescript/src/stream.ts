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
  /** Consecutive failed reconnects before giving up (default 20). */
  maxReconnects?: number;
  /** First reconnect delay in ms, doubled per failure up to 5 s (default 250). */
  reconnectDelayMs?: number;
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

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });

/**
 * The session's ledger as an async iterator that outlives dropped
 * connections: every reconnect sends `Last-Event-ID` with the last event
 * yielded, and anything at or below it is dropped, so the caller sees each
 * sequence number once and in order. Ends only when the caller stops
 * iterating, the signal aborts, the server refuses (4xx: thrown at once), or
 * `maxReconnects` reconnects in a row fail.
 */
export async function* streamSession(transport: Transport, sessionId: string, opts: StreamOptions = {}): AsyncGenerator<StreamItem> {
  let lastSeq = sequenceOf(opts.after);
  let failures = 0;
  const max = opts.maxReconnects ?? 20;
  const baseDelay = opts.reconnectDelayMs ?? 250;
  const url = transport.url('getV1SessionsSessionIdStream', { session_id: sessionId }, opts.deltas ? { deltas: 'true' } : undefined);
  while (!opts.signal?.aborted) {
    const local = new AbortController();
    const onAbort = () => local.abort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    let error: unknown = new TroupeConnectionError('the stream ended');
    try {
      const headers: Record<string, string> = { Accept: 'text/event-stream' };
      if (lastSeq > 0) headers['Last-Event-ID'] = `${sessionId}:${lastSeq}`;
      const res = await transport.raw(url, { method: 'GET', headers, signal: local.signal, timeoutMs: 0 });
      if (!res.ok || !res.body) await readBody(res);
      failures = 0;
      opts.onOpen?.({ lastEventId: lastSeq ? `${sessionId}:${lastSeq}` : null });
      for await (const rec of parseSse(res.body!)) {
        if (opts.signal?.aborted) return;
        if (rec.event === 'assistant.delta') {
          if (opts.deltas) yield { type: 'assistant.delta', data: safeJson(rec.data) as AssistantDelta };
          continue;
        }
        const ev = safeJson(rec.data) as SessionEvent;
        if (typeof ev?.sequence_number !== 'number' || ev.sequence_number <= lastSeq) continue;
        lastSeq = ev.sequence_number;
        yield ev;
      }
    } catch (err) {
      if (opts.signal?.aborted) return;
      // A refusal will not change by retrying (bad id, revoked key); a 5xx might.
      if (err instanceof TroupeApiError && err.status < 500 && err.status !== 429) throw err;
      error = err;
    } finally {
      opts.signal?.removeEventListener('abort', onAbort);
      local.abort();
    }
    if (opts.signal?.aborted) return;
    if (++failures > max) throw error instanceof Error ? error : new TroupeConnectionError(String(error));
    opts.onReconnect?.({ attempt: failures, lastEventId: lastSeq ? `${sessionId}:${lastSeq}` : null, error });
    await sleep(Math.min(5000, baseDelay * 2 ** (failures - 1)), opts.signal);
  }
}

function safeJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}
