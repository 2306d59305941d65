import { request } from 'undici';

const CREATED_AT = '"created_at":"';

/**
 * Reads an SSE stream, calling onEvent(sequence, created_at) per record. Lean, since the client shares the
 * machine's cores with the stack it measures: undici's request (no fetch Response), and per record only the
 * two fields it needs, found by position (the sequence from the `id:` line, `created_at` from the data).
 */
export async function stream(url: string, key: string, onEvent: (seq: number, createdAt: number) => void, signal: AbortSignal): Promise<void> {
  const res = await request(url, { headers: { authorization: `Bearer ${key}` }, signal });
  res.body.setEncoding('utf8');
  let buf = '';
  res.body.on('data', (chunk: string) => {
    buf += chunk;
    let start = 0;
    let end;
    while ((end = buf.indexOf('\n\n', start)) >= 0) {
      if (buf.startsWith('id: ', start)) {
        const idEnd = buf.indexOf('\n', start);
        const seq = Number(buf.slice(buf.lastIndexOf(':', idEnd) + 1, idEnd));
        const at = buf.indexOf(CREATED_AT, idEnd) + CREATED_AT.length;
        onEvent(seq, Date.parse(buf.slice(at, buf.indexOf('"', at))));
      }
      start = end + 2;
    }
    buf = buf.slice(start);
  });
  res.body.on('error', () => undefined /* aborted */);
}
