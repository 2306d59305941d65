/**
 * An SSE client as a browser's EventSource behaves: when the stream drops it
 * reconnects (to the URL `urls` gives for the attempt) with Last-Event-ID.
 * Bounded: at most `maxAttempts` connections, each read until the server
 * ends it or the client is closed.
 */
export class ReconnectingStream {
  readonly sequences: number[] = [];
  lastId = '';
  reconnects = 0;
  /** When a stream was last opened after a reconnect. */
  reopenedAt = 0;
  /** When the last record with an id arrived. */
  lastEventAt = 0;
  /** `retry:` hints the server sent before ending a stream. */
  retryHints = 0;
  private readonly abort = new AbortController();
  private loop: Promise<void> = Promise.resolve();
  private opened!: () => void;
  readonly ready = new Promise<void>((r) => (this.opened = r));

  constructor(
    readonly sessionId: string,
    private readonly urls: () => string[],
    private readonly apiKey: string,
    private readonly maxAttempts = 50,
  ) {}

  start(): void {
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    for (let attempt = 0; attempt < this.maxAttempts && !this.abort.signal.aborted; attempt++) {
      const urls = this.urls();
      const base = urls[attempt % urls.length];
      try {
        const headers: Record<string, string> = { Authorization: `Bearer ${this.apiKey}`, Accept: 'text/event-stream' };
        if (this.lastId) headers['Last-Event-ID'] = this.lastId;
        const res = await fetch(`${base}/v1/sessions/${this.sessionId}/stream`, { headers, signal: this.abort.signal });
        if (res.ok && res.body) {
          this.opened();
          if (this.reconnects > 0) this.reopenedAt = Date.now();
          await this.read(res.body);
        } else await res.body?.cancel();
      } catch {
        // A dropped connection; reconnect below.
      }
      if (this.abort.signal.aborted) return;
      this.reconnects++;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buf = '';
    for await (const chunk of body) {
      buf += decoder.decode(chunk, { stream: true });
      let idx;
      while ((idx = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, idx);
        buf = buf.slice(idx + 2);
        const lines = block.split('\n');
        if (lines.some((l) => l.startsWith('retry: '))) this.retryHints++;
        const id = lines.find((l) => l.startsWith('id: '))?.slice(4);
        if (!id) continue;
        this.lastId = id;
        this.lastEventAt = Date.now();
        this.sequences.push(Number(id.slice(id.lastIndexOf(':') + 1)));
      }
    }
  }

  /** Every sequence 1..n exactly once, in order: what "no gap, no duplicate" means for one stream. */
  exactly(n: number): boolean {
    return this.sequences.length === n && this.sequences.every((q, i) => q === i + 1);
  }

  async close(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }
}
