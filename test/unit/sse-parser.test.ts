import assert from 'node:assert/strict';
import { ChatEncoder } from '../../src/lib/llm/formats/openai-chat/stream.js';
import { SseParser, type SseMessage } from '../../src/lib/llm/sse.js';

/** Every message of `bytes` fed to one parser in the pieces cut at `cuts`, then its end. */
function parse(bytes: Buffer, cuts: number[]): SseMessage[] {
  const p = new SseParser();
  const out: SseMessage[] = [];
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    p.push(bytes.subarray(at, cut), out);
    at = cut;
  }
  return [...out, ...p.end()];
}

/** The stream cut in two at every byte, and in three at every pair of bytes: each must parse the same as whole. */
function everySplit(text: string, expected: SseMessage[]): void {
  const bytes = Buffer.from(text);
  assert.deepEqual(parse(bytes, []), expected, 'whole');
  for (let i = 0; i <= bytes.length; i++) {
    assert.deepEqual(parse(bytes, [i]), expected, `cut at ${i}`);
    for (let j = i; j <= bytes.length; j++) assert.deepEqual(parse(bytes, [i, j]), expected, `cuts at ${i}, ${j}`);
  }
}

describe('SSE parser', () => {
  it('keeps an unfinished line in linear time: a 2 MiB line in 64-byte chunks', () => {
    const p = new SseParser(4 * 2 ** 20);
    const line = Buffer.from(`data: ${'y'.repeat(2 * 2 ** 20)}`);
    const started = performance.now();
    for (let at = 0; at < line.length; at += 64) assert.deepEqual(p.push(line.subarray(at, at + 64)), []);
    const [msg] = p.push('\n\n');
    // Joining the pieces at every chunk copied 32 GB here: minutes, not milliseconds.
    assert.ok(performance.now() - started < 2000, `took ${performance.now() - started} ms`);
    assert.equal(msg.data.length, 2 * 2 ** 20);
  });

  it('stops a line or a message past its cap with upstream_response_too_large', () => {
    const tooLarge = (e: Error & { code?: string }) => e.code === 'upstream_response_too_large';
    const endless = new SseParser(1024);
    assert.throws(() => {
      for (let i = 0; i < 1000; i++) endless.push(`data: ${'z'.repeat(100)}`);
    }, tooLarge);
    const manyLines = new SseParser(1024);
    assert.throws(() => {
      for (let i = 0; i < 1000; i++) manyLines.push(`data: ${'z'.repeat(100)}\n`);
    }, tooLarge);
    // Under the cap, and messages that each stay under it however many there are, pass.
    const fine = new SseParser(1024);
    let n = 0;
    for (let i = 0; i < 1000; i++) n += fine.push(`data: ${'z'.repeat(900)}\n\n`).length;
    assert.equal(n, 1000);
  });

  it('parses LF and CRLF lines, events and data, with chunk boundaries anywhere', () => {
    const expected = [
      { event: undefined, data: '{"a":1}' },
      { event: 'content_block_delta', data: '{"b":2}' },
      { event: undefined, data: '[DONE]' },
    ];
    everySplit('data: {"a":1}\n\nevent: content_block_delta\ndata: {"b":2}\n\ndata: [DONE]\n\n', expected);
    everySplit('data: {"a":1}\r\n\r\nevent: content_block_delta\r\ndata: {"b":2}\r\n\r\ndata: [DONE]\r\n\r\n', expected);
  });

  it('joins multi-line data with newlines, skips comments and unknown fields, and takes one optional space', () => {
    everySplit(': keep-alive\n\ndata: line one\ndata:line two\n: a comment inside\nid: 7\nretry: 100\ndata:  two spaces\n\n', [{ event: undefined, data: 'line one\nline two\n two spaces' }]);
  });

  it('reads a field without a colon as an empty value, and sends no message without data', () => {
    everySplit('event: ping\n\ndata\n\nevent\ndata: x\n\n', [
      { event: undefined, data: '' },
      { event: '', data: 'x' },
    ]);
  });

  it('keeps multi-byte UTF-8 whole across chunk edges, and drops a leading BOM', () => {
    everySplit('\uFEFFdata: héllo → 世界 🎉\n\nevent: ünïcode\ndata: ok\n\n', [
      { event: undefined, data: 'héllo → 世界 🎉' },
      { event: 'ünïcode', data: 'ok' },
    ]);
  });

  it('gives a last message not closed by a blank line at the end, and drops an unfinished last line', () => {
    everySplit('data: a\n\ndata: b\ndata: c', [
      { event: undefined, data: 'a' },
      { event: undefined, data: 'b' },
    ]);
  });

  it('does not carry a reused event name into a message that names none', () => {
    everySplit('event: e1\ndata: 1\n\nevent: e1\ndata: 2\n\ndata: 3\n\nevent: e2\ndata: 4\n\n', [
      { event: 'e1', data: '1' },
      { event: 'e1', data: '2' },
      { event: undefined, data: '3' },
      { event: 'e2', data: '4' },
    ]);
  });
});

describe('chat stream encoder', () => {
  it('writes text and tool-argument deltas as the same bytes as the whole chunk object, JSON-escaping their text', () => {
    const enc = new ChatEncoder({ selected_model: 'm "1"', reasoning_effort: null, reason: 'r', conversation_id: 'c' });
    const start = enc.encode({ type: 'start', id: 'chatcmpl-x\\y', model: 'up' });
    const base = JSON.parse(start.slice('data: '.length)) as { id: string; created: number; model: string };
    const chunk = (delta: unknown) => `data: ${JSON.stringify({ id: base.id, object: 'chat.completion.chunk', created: base.created, model: base.model, choices: [{ index: 0, delta, logprobs: null, finish_reason: null }] })}\n\n`;
    const text = 'a "quote", a \\ backslash, a\nnewline, \u2028 and 世界';
    assert.equal(enc.encode({ type: 'text', index: 0, text }), chunk({ content: text }));
    enc.encode({ type: 'block_stop', index: 0 });
    const opened = enc.encode({ type: 'block_start', index: 1, block: { type: 'tool_call', id: 'call_1', name: 'f' } });
    assert.match(opened, /"tool_calls":\[\{"index":0,"id":"call_1"/);
    assert.equal(enc.encode({ type: 'args', index: 1, json: '{"q":"}{"' }), chunk({ tool_calls: [{ index: 0, function: { arguments: '{"q":"}{"' } }] }));
  });
});
