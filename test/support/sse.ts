/** A minimal SSE client over fetch for tests: collects records until told to stop. */
export interface SseRecord {
  id: string;
  event: string;
  data: string;
}

export class SseClient {
  readonly records: SseRecord[] = [];
  readonly comments: string[] = [];
  private readonly controller = new AbortController();
  private done: Promise<void> = Promise.resolve();
  status = 0;

  constructor(
    private readonly url: string,
    private readonly headers: Record<string, string>,
  ) {}

  async open(): Promise<void> {
    const res = await fetch(this.url, { headers: { Accept: 'text/event-stream', ...this.headers }, signal: this.controller.signal });
    this.status = res.status;
    if (!res.ok || !res.body) {
      await res.body?.cancel();
      return;
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    this.done = (async () => {
      let buf = '';
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          buf += decoder.decode(value, { stream: true });
          let idx;
          while ((idx = buf.indexOf('\n\n')) >= 0) {
            this.parse(buf.slice(0, idx));
            buf = buf.slice(idx + 2);
          }
        }
      } catch {
        // aborted
      }
    })();
  }

  private parse(block: string): void {
    const rec: Partial<SseRecord> = {};
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) this.comments.push(line.slice(1).trim());
      else if (line.startsWith('id: ')) rec.id = line.slice(4);
      else if (line.startsWith('event: ')) rec.event = line.slice(7);
      else if (line.startsWith('data: ')) rec.data = line.slice(6);
    }
    // Ephemeral records (deltas) have no id; they are kept too, in arrival order.
    if (rec.id !== undefined || (rec.event !== undefined && rec.data !== undefined)) this.records.push({ id: '', ...rec } as SseRecord);
  }

  async waitFor(pred: (r: SseRecord[]) => boolean, ms = 15_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!pred(this.records)) {
      if (Date.now() > deadline) throw new Error(`SSE condition not met; got ${this.records.map((r) => `${r.id}:${r.event}`).join(', ')}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Resolves when the server ends the stream (or it is closed). */
  ended(): Promise<void> {
    return this.done;
  }

  async close(): Promise<void> {
    this.controller.abort();
    await this.done;
  }
}
