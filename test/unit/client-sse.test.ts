import assert from 'node:assert/strict';
import { parseSse } from '../../clients/typescript/src/sse.js';

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const ch of chunks) c.enqueue(enc.encode(ch));
      c.close();
    },
  });
}

async function all(chunks: string[]) {
  const out = [];
  for await (const r of parseSse(streamOf(chunks))) out.push(r);
  return out;
}

describe('client SSE parser', () => {
  it('splits records across chunk boundaries and line endings, skipping comments', async () => {
    const recs = await all([': connected\n\nid: s:1\nev', 'ent: user.message\ndata: {"a":', '1}\r', '\n\r\n', 'event: assistant.delta\ndata: x\ndata: y\n\n: heartbeat\n\n']);
    assert.deepEqual(recs, [
      { id: 's:1', event: 'user.message', data: '{"a":1}' },
      { id: null, event: 'assistant.delta', data: 'x\ny' },
    ]);
  });

  it('drops a record cut off before its blank line', async () => {
    assert.deepEqual(await all(['id: s:1\ndata: {}\n\nid: s:2\ndata: {"half"']), [{ id: 's:1', event: 'message', data: '{}' }]);
  });

  it('passes a retry: of digits to onRetry (and ignores any other), dispatching nothing for it', async () => {
    const hints: number[] = [];
    const out = [];
    for await (const r of parseSse(streamOf(['id: s:1\ndata: {}\n\nretry: 1', '000\n: shutting down\n\nretry: 1.5\n\nretry: x\n\n']), (ms) => hints.push(ms))) out.push(r);
    assert.deepEqual(out, [{ id: 's:1', event: 'message', data: '{}' }]);
    assert.deepEqual(hints, [1000]);
  });
});
