/** Server-sent events: a tolerant incremental parser and the writer's framing. */

export interface SseMessage {
  event?: string;
  data: string;
}

/**
 * Parses an SSE byte stream into messages as they complete, chunk by chunk;
 * nothing is held back beyond the current unfinished line. Synchronous, so a
 * reader that already awaits each chunk adds no promise per message.
 */
export class SseParser {
  private readonly decoder = new TextDecoder();
  private buf = '';
  private event: string | undefined;
  private data: string[] = [];

  /** The messages that this chunk completes. */
  push(chunk: Buffer | string): SseMessage[] {
    this.buf += typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    const out: SseMessage[] = [];
    let nl: number;
    while ((nl = this.buf.indexOf('\n')) >= 0) {
      let line = this.buf.slice(0, nl);
      this.buf = this.buf.slice(nl + 1);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line === '') {
        if (this.data.length > 0) out.push({ event: this.event, data: this.data.join('\n') });
        this.event = undefined;
        this.data = [];
      } else if (!line.startsWith(':')) {
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'event') this.event = value;
        else if (field === 'data') this.data.push(value);
      }
    }
    return out;
  }

  /** At the end of the stream: a last message that was not closed by a blank line. */
  end(): SseMessage[] {
    const last = this.data.length > 0 ? [{ event: this.event, data: this.data.join('\n') }] : [];
    this.data = [];
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
