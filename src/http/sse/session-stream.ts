import { PassThrough } from 'node:stream';
import type { EventEnvelope } from '../../domain/ledger.js';
import type { EventDoc } from '../../store/ledger.js';
import { envelope } from '../../store/ledger.js';
import type { LiveEvent } from '../../pubsub/session-events.js';

export const HEARTBEAT_MS = 15_000;
const BACKFILL_PAGE = 500;

/** The ledger as a stream reads it; `opening` marks the stream's first backfill (ledger-reads.ts starts it at once). */
export interface StreamLedger {
  after(sessionId: string, after: number, limit: number, opening?: boolean): Promise<EventDoc[]>;
}

/** A live ledger envelope and its JSON as published, sent as the record's data without serializing it again. */
export type LiveEnvelope = LiveEvent & { ev: EventEnvelope };

function record(ev: EventEnvelope, json: string): string {
  return `id: ${ev.id}\nevent: ${ev.type}\ndata: ${json}\n\n`;
}

/**
 * One client's SSE stream of a session ledger. Ordering and completeness come
 * from the ledger, not from pub/sub: live events are only a hint of what is
 * new. Anything at or below the last sequence sent is dropped (no duplicate);
 * a live event past a hole first repairs the hole from the ledger (no gap).
 * What one turn (or one backfill page) adds goes out in one write.
 */
export class SessionStream {
  readonly out = new PassThrough();
  private lastSent: number;
  private backfilling = true;
  private pending: LiveEnvelope[] = [];
  /** Records not yet written: flushed once per live batch and per backfill page. */
  private buffered = '';
  private chain: Promise<void> = Promise.resolve();
  private heartbeat: NodeJS.Timeout | null = null;
  private closed = false;
  /** The live feed was interrupted during the backfill: read the ledger once more before going live. */
  private missedLive = false;

  constructor(
    private readonly ledger: StreamLedger,
    private readonly sessionId: string,
    after: number,
    private readonly heartbeatMs = HEARTBEAT_MS,
  ) {
    this.lastSent = after;
  }

  /** Called with each live batch of this session's envelopes (one turn's), in order. */
  onLive(batch: readonly LiveEnvelope[]): void {
    if (batch.length === 0) return;
    if (this.backfilling) {
      this.pending.push(...batch);
      return;
    }
    this.chain = this.chain.then(() => this.deliver(batch)).catch(() => this.close());
  }

  /** Sends the ledger after the cursor, then whatever arrived live meanwhile. */
  async start(): Promise<void> {
    this.out.write(': connected\n\n');
    this.heartbeat = setInterval(() => this.out.write(': heartbeat\n\n'), this.heartbeatMs);
    // Bounded by the interruptions, each of which is a reconnect to Redis.
    do {
      this.missedLive = false;
      await this.repairUpTo(Number.MAX_SAFE_INTEGER);
    } while (this.missedLive && !this.closed);
    this.backfilling = false;
    const pending = this.pending;
    this.pending = [];
    this.onLive(pending);
  }

  /**
   * The live feed was interrupted (Redis's subscriber reconnected): what was
   * published meanwhile is lost, and a session that went still would leave
   * the stream short of its ledger's end for good. Reads it from the ledger.
   */
  catchUp(): void {
    if (this.closed) return;
    if (this.backfilling) {
      this.missedLive = true;
      return;
    }
    this.chain = this.chain.then(() => this.repairUpTo(Number.MAX_SAFE_INTEGER)).catch(() => this.close());
  }

  private async deliver(batch: readonly LiveEnvelope[]): Promise<void> {
    for (const { ev, json } of batch) {
      if (this.closed || ev.sequence_number <= this.lastSent) continue;
      if (ev.sequence_number > this.lastSent + 1) {
        // Nothing stays buffered across a wait: the records go out in order, and a drain meanwhile loses none.
        this.flush();
        await this.repairUpTo(ev.sequence_number - 1);
      }
      this.send(ev, json);
    }
    this.flush();
  }

  private async repairUpTo(limit: number): Promise<void> {
    while (!this.closed && this.lastSent < limit) {
      const docs = await this.ledger.after(this.sessionId, this.lastSent, BACKFILL_PAGE, this.backfilling);
      const wanted = docs.filter((d) => d.sequence_number <= limit);
      for (const d of wanted) {
        const ev = envelope(d);
        this.send(ev, JSON.stringify(ev));
      }
      this.flush();
      if (docs.length < BACKFILL_PAGE || wanted.length < docs.length) return;
    }
  }

  /** An ephemeral record (live token deltas): no id, so it is never part of a resume. */
  sendEphemeral(type: string, data: string): void {
    if (!this.closed && !this.backfilling) this.out.write(`event: ${type}\ndata: ${data}\n\n`);
  }

  private send(ev: EventEnvelope, json: string): void {
    if (this.closed || ev.sequence_number !== this.lastSent + 1) return;
    this.lastSent = ev.sequence_number;
    this.buffered += record(ev, json);
  }

  private flush(): void {
    if (this.closed || !this.buffered) return;
    this.out.write(this.buffered);
    this.buffered = '';
  }

  /**
   * Ends the stream for a shutdown: a `retry:` field sets how soon the
   * client's EventSource reconnects (to another process, with Last-Event-ID,
   * so nothing is lost), then a clean end of the response.
   */
  drain(retryMs: number): void {
    if (this.closed) return;
    this.out.write(`retry: ${retryMs}\n: server shutting down; reconnect to resume\n\n`);
    this.close();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.out.end();
  }
}

/** `Last-Event-ID` is `<session_id>:<n>` (or just `<n>`); resume after n. */
export function parseLastEventId(raw: string | undefined, sessionId: string): number | null {
  if (!raw) return 0;
  const m = /^(?:(.+):)?(\d{1,15})$/.exec(raw.trim());
  if (!m || (m[1] !== undefined && m[1] !== sessionId)) return null;
  return Number(m[2]);
}
