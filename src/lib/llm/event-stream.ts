import type { Redactor, StreamRedactor } from '../../domain/redact.js';
import { UpstreamError, upstreamTooLarge } from './errors.js';
import type { StreamDecoder } from './formats/format.js';
import { SseParser, type SseMessage } from './sse.js';
import type { ChunkQueue } from './upstream-post.js';
import type { StreamEvent, Usage } from './types.js';
import type { Provider } from '../../domain/providers.js';

/**
 * Text and tool-argument deltas go through a stream scrubber per block: a
 * model echoing a key writes it over several deltas, which the per-message
 * scrub cannot see whole. Events are the decoder's own, so a scrubbed delta
 * is changed in place rather than copied.
 */
class PieceScrubber {
  private readonly blocks = new Map<number, StreamRedactor>();
  private readonly kinds = new Map<number, 'text' | 'args'>();

  constructor(private readonly scrub: Redactor) {}

  pass(ev: StreamEvent, out: StreamEvent[]): void {
    if (this.scrub.empty) return void out.push(ev);
    if (ev.type === 'text' || ev.type === 'args') {
      let s = this.blocks.get(ev.index);
      if (!s) this.blocks.set(ev.index, (s = this.scrub.stream()));
      if (ev.type === 'text') ev.text = s.push(ev.text);
      else ev.json = s.push(ev.json);
      if ((ev.type === 'text' ? ev.text : ev.json) !== '') out.push(ev);
      this.kinds.set(ev.index, ev.type);
      return;
    }
    if (ev.type === 'block_stop') this.flush(ev.index, out);
    if (ev.type === 'finish') for (const index of [...this.blocks.keys()]) this.flush(index, out);
    out.push(ev);
  }

  private flush(index: number, out: StreamEvent[]): void {
    const rest = this.blocks.get(index)?.flush() ?? '';
    this.blocks.delete(index);
    if (rest !== '') out.push(this.kinds.get(index) === 'args' ? { type: 'args', index, json: rest } : { type: 'text', index, text: rest });
  }
}

/** How a stream ended, for the caller's metrics: the usage it reported, or why it failed (see LlmClient). */
export type StreamClosed = (usage: Usage | null, failure: unknown) => void;

/**
 * A streaming answer as canonical events, read one upstream chunk's worth at
 * a time. The router relays every event, and an async generator cost each one
 * a promise and an iterator result on the way out plus a generator object in
 * the scrubber (a sixth of a routed stream's allocation, docs/benchmarks.md);
 * here a read costs one promise for all the upstream chunks waiting, and
 * their events come as one array, which the router writes to its client as
 * one piece.
 */
export class EventStream {
  private readonly sse: SseParser;
  /** Bytes of the answer so far, for `limits.answerBytes`. */
  private bytes = 0;
  private readonly msgs: SseMessage[] = [];
  private readonly pieces: PieceScrubber;
  private usage: Usage | null = null;
  private closed = false;

  constructor(
    private readonly provider: Provider,
    private readonly body: ChunkQueue,
    private readonly decoder: StreamDecoder,
    private readonly scrub: Redactor,
    private readonly aborted: () => boolean,
    private readonly onClose: StreamClosed,
    /** One SSE event's cap, and the whole answer's (for a reader that keeps it all: agent turns; a relay needs none). */
    private readonly limits: { eventBytes: number; answerBytes: number } = { eventBytes: Number.MAX_SAFE_INTEGER, answerBytes: Number.MAX_SAFE_INTEGER },
  ) {
    this.pieces = new PieceScrubber(scrub);
    this.sse = new SseParser(limits.eventBytes);
  }

  /** The events of the upstream chunks that have arrived (never an empty array), or null once the answer has ended. */
  async read(): Promise<StreamEvent[] | null> {
    try {
      while (!this.closed) {
        const first = await this.body.read();
        if (first === null) {
          const events = this.ending();
          this.close();
          return events.length > 0 ? events : null;
        }
        // Every chunk that arrived in the same socket read goes into this batch: one promise and one client write for them all.
        for (let chunk: Buffer | null = first; chunk !== null; chunk = this.body.poll()) {
          this.bytes += chunk.length;
          if (this.bytes > this.limits.answerBytes) throw upstreamTooLarge('streamed answer', this.limits.answerBytes);
          this.sse.push(chunk, this.msgs);
        }
        const events = this.decode(this.msgs);
        if (events.length > 0) return events;
      }
      return null;
    } catch (e) {
      const failure = e instanceof UpstreamError || this.aborted() ? e : new UpstreamError(this.scrub.redact(`${this.provider} upstream stream broke: ${(e as Error).message}`), true);
      this.close(failure);
      throw failure;
    }
  }

  /** Stops the upstream answer if it is still arriving; reading on gives null. Safe to call more than once. */
  close(failure: unknown = null): void {
    if (this.closed) return;
    this.closed = true;
    this.body.close();
    this.onClose(this.usage, failure);
  }

  private ending(): StreamEvent[] {
    const out = this.decode(this.sse.end());
    for (const ev of this.decoder.end()) this.pass(ev, out);
    return out;
  }

  /** Scrubbed, decoded and passed through the piece scrubber; `msgs` is emptied for the next chunk. */
  private decode(msgs: SseMessage[]): StreamEvent[] {
    const out: StreamEvent[] = [];
    for (const msg of msgs) {
      msg.data = this.scrub.redact(msg.data);
      for (const ev of this.decoder.push(msg)) this.pass(ev, out);
    }
    msgs.length = 0;
    return out;
  }

  private pass(ev: StreamEvent, out: StreamEvent[]): void {
    this.pieces.pass(ev, out);
    if (ev.type === 'finish') this.usage = ev.usage;
  }
}
