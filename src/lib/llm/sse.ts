/** Server-sent events: a tolerant incremental parser and the writer's framing. */

import { upstreamTooLarge } from './errors.js';

export interface SseMessage {
  event?: string;
  data: string;
}

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SPACE = 0x20;

/** `data` and `event` as bytes, so a line's field is told without making a string of it. */
function isField(buf: Buffer, start: number, end: number, name: string): boolean {
  if (end - start !== name.length) return false;
  for (let i = 0; i < name.length; i++) if (buf[start + i] !== name.charCodeAt(i)) return false;
  return true;
}

/**
 * Parses an SSE byte stream into messages as they complete, chunk by chunk;
 * nothing is held back beyond the current unfinished message, and that is
 * capped (`maxEventBytes`): an upstream that never ends a line or a message
 * stops its call instead of growing the process. Synchronous, so a
 * reader that already awaits each chunk adds no promise per message.
 *
 * It works on the bytes: lines are found by index and only a field's value is
 * decoded, straight from the chunk. A decoded copy of each chunk, and a sliced
 * string per line and per remainder, were a tenth of what a routed stream
 * allocated (docs/benchmarks.md). UTF-8 split across chunks needs no streaming
 * decoder: a line is decoded only once it is whole, and a newline byte is
 * never inside a multi-byte character.
 */
export class SseParser {
  /**
   * The unfinished last line so far, as the pieces it arrived in (copied: a chunk's memory is not kept alive by
   * them). Joined once, when its newline comes: joining at every chunk made a long line cost O(n²).
   */
  private rest: Buffer[] = [];
  private restBytes = 0;
  /** Bytes of the current message's lines so far: a message past `maxEventBytes` stops the stream. */
  private eventBytes = 0;
  private started = false;
  private event: string | undefined;
  /** The message's data lines so far, joined by '\n'; null while it has none. */
  private data: string | null = null;
  private lastEvent: string | undefined;

  /** `maxEventBytes`: the most one message (its lines, unfinished ones included) may take; past it, push throws. */
  constructor(private readonly maxEventBytes = Number.MAX_SAFE_INTEGER) {}

  /** The messages that this chunk completes, appended to `out`. Throws `upstream_response_too_large` past the cap. */
  push(chunk: Buffer | string, out: SseMessage[] = []): SseMessage[] {
    let buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    let start = 0;
    if (!this.started) {
      if (this.restBytes > 0) buf = Buffer.concat([...this.takeRest(), buf]); // at most two bytes of a BOM
      if (buf.length === 0) return out;
      if (buf.length < 3 && buf[0] === 0xef) {
        this.keep(buf); // a BOM may still be arriving
        return out;
      }
      this.started = true;
      if (buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf) start = 3; // a leading BOM is not part of the first field
    }
    let nl = buf.indexOf(LF, start);
    if (this.restBytes > 0) {
      if (nl < 0) {
        this.keep(buf.subarray(start));
        return out;
      }
      const line = Buffer.concat([...this.takeRest(), buf.subarray(start, nl)]);
      this.line(line, 0, line.length > 0 && line[line.length - 1] === CR ? line.length - 1 : line.length, out);
      start = nl + 1;
      nl = buf.indexOf(LF, start);
    }
    for (; nl >= 0; nl = buf.indexOf(LF, start)) {
      this.line(buf, start, nl > start && buf[nl - 1] === CR ? nl - 1 : nl, out);
      start = nl + 1;
    }
    if (start < buf.length) this.keep(buf.subarray(start));
    return out;
  }

  private keep(part: Buffer): void {
    this.restBytes += part.length;
    this.check(this.restBytes);
    this.rest.push(Buffer.from(part));
  }

  private takeRest(): Buffer[] {
    const parts = this.rest;
    this.rest = [];
    this.restBytes = 0;
    return parts;
  }

  private check(pendingBytes: number): void {
    if (this.eventBytes + pendingBytes > this.maxEventBytes) throw upstreamTooLarge('SSE event', this.maxEventBytes);
  }

  /** One line, without its line ending: a field, a comment, or the blank line that ends a message. */
  private line(buf: Buffer, start: number, end: number, out: SseMessage[]): void {
    if (start === end) {
      if (this.data !== null) out.push({ event: this.event, data: this.data });
      this.event = undefined;
      this.data = null;
      this.eventBytes = 0;
      return;
    }
    this.check(end - start);
    if (buf[start] === COLON) return; // a comment
    let colon = start;
    while (colon < end && buf[colon] !== COLON) colon++;
    let value = colon + 1;
    if (value < end && buf[value] === SPACE) value++;
    if (value > end) value = end; // a field name alone: its value is empty
    if (isField(buf, start, colon, 'data')) {
      // Only data is held until the message ends; other lines are checked for length alone.
      this.eventBytes += end - start;
      const v = buf.toString('utf8', value, end);
      this.data = this.data === null ? v : `${this.data}\n${v}`;
    } else if (isField(buf, start, colon, 'event')) this.event = this.eventName(buf, value, end);
  }

  /** Providers name the same few events over and over: the last (ASCII) name is reused when the bytes match. */
  private eventName(buf: Buffer, start: number, end: number): string {
    const last = this.lastEvent;
    if (last !== undefined && isField(buf, start, end, last)) return last;
    const name = buf.toString('utf8', start, end);
    this.lastEvent = /^[\x20-\x7e]*$/.test(name) ? name : undefined;
    return name;
  }

  /** At the end of the stream: a last message that was not closed by a blank line. */
  end(): SseMessage[] {
    const last = this.data !== null ? [{ event: this.event, data: this.data }] : [];
    this.data = null;
    return last;
  }
}

/** The same parser over an async byte stream. */
export async function* parseSse(body: AsyncIterable<Buffer | string>): AsyncGenerator<SseMessage> {
  const parser = new SseParser();
  for await (const chunk of body) yield* parser.push(chunk);
  yield* parser.end();
}

export function sseFrame(data: unknown, event?: string): string {
  const json = typeof data === 'string' ? data : JSON.stringify(data);
  return event ? `event: ${event}\ndata: ${json}\n\n` : `data: ${json}\n\n`;
}
