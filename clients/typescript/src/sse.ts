/** One Server-Sent Events record, as the WHATWG parsing rules produce it. */
export interface SseRecord {
  id: string | null;
  event: string;
  data: string;
}

/**
 * Parses an SSE byte stream into records. Comments (`: heartbeat`) are skipped;
 * a record without `id:` keeps id null (the server's ephemeral deltas), so a
 * resume point only ever moves on ledger events. A `retry:` field of digits is
 * the server's reconnection time in ms, passed to `onRetry` as it arrives (it
 * usually comes alone, just before the server ends the stream).
 */
export async function* parseSse(body: ReadableStream<Uint8Array>, onRetry?: (ms: number) => void): AsyncGenerator<SseRecord> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buf = '';
  let rec: { id: string | null; event: string; data: string[] } = { id: null, event: 'message', data: [] };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += decoder.decode(value, { stream: true });
      let nl: RegExpExecArray | null;
      while ((nl = /\r\n|\n|\r/.exec(buf))) {
        // A lone \r at the very end may be half of \r\n: wait for the next chunk.
        if (nl[0] === '\r' && nl.index === buf.length - 1) break;
        const line = buf.slice(0, nl.index);
        buf = buf.slice(nl.index + nl[0].length);
        if (line === '') {
          if (rec.data.length) yield { id: rec.id, event: rec.event, data: rec.data.join('\n') };
          rec = { id: null, event: 'message', data: [] };
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') rec.data.push(value);
        else if (field === 'event') rec.event = value;
        else if (field === 'id' && !value.includes('\0')) rec.id = value;
        else if (field === 'retry' && /^\d+$/.test(value)) onRetry?.(Number(value));
      }
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => undefined);
  }
}
