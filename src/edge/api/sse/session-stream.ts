import { PassThrough } from 'node:stream';
import type { EventEnvelope } from '../../../domain/ledger.js';
import type { EventDoc } from '../../../store/ledger.js';
import { envelope } from '../../../store/ledger.js';
import type { LiveEvent } from '../../../lib/pubsub/session-events.js';

export const HEARTBEAT_MS = 15_000;
const BACKFILL_PAGE = 500;
/** Records are written in pieces of about this size, each after the client has taken the one before. */
const WRITE_BYTES = 64 * 1024;
/** Live events held while the backfill runs; past it they are dropped and the ledger is read once more instead. */
const PENDING_MAX = 1000;

/** The ledger as a stream reads it; `opening` marks the stream's first backfill (ledger-reads.ts starts it at once). */
export interface StreamLedger {
  after(sessionId: string, after: number, limit: number, opening?: boolean): Promise<EventDoc[]>;
}

/** A live ledger envelope and its JSON as published, sent as the record's data without serializing it again. */
export type LiveEnvelope = LiveEvent & { ev: EventEnvelope };

export interface SessionStreamOptions {
  heartbeatMs?: number;
  /** How long the client may take no bytes before `onStall` is called (TROUPE_SSE_STALL_MS). */
  stallMs?: number;
  /** The client has read nothing for `stallMs`: the owner ends the stream (`drain`) and frees its socket. */
  onStall?: () => void;
}

function record(ev: EventEnvelope, json: string): string {
  return `id: ${ev.id}\nevent: ${ev.type}\ndata: ${json}\n\n`;
}

/**
 * One client's SSE stream of a session ledger. Ordering and completeness come
 * from the ledger, not from pub/sub: live events are only a hint of what is
 * new. Anything at or below the last sequence sent is dropped (no duplicate);
 * a live event past a hole first repairs the hole from the ledger (no gap).
 * What one turn (or one backfill page) adds goes out in one write.
 *
 * A client that does not read holds the stream back instead of growing the
 * process: a write the response cannot take waits for it to drain before the
 * stream reads or writes more. Live events that arrive meanwhile are not kept;
 * once it drains, the stream reads them from the ledger (the truth anyway).
 * So what one stream buffers is about one write piece and the socket's
 * buffers, however far behind its client is. A client that takes nothing for
 * `stallMs` is told to come back (`onStall`, then `drain`), and resumes
 * from its Last-Event-ID.
 */
export class SessionStream {
  readonly out = new PassThrough();
  private lastSent: number;
  private backfilling = true;
  private pending: LiveEnvelope[] = [];
  /** Records not yet written: flushed once per live batch and per backfill page (in pieces of WRITE_BYTES). */
  private buffered = '';
  private chain: Promise<void> = Promise.resolve();
  private heartbeat: NodeJS.Timeout | null = null;
  private closed = false;
  /** The live feed was interrupted during the backfill: read the ledger once more before going live. */
  private missedLive = false;
  /** Waiting for the client to take what was written: live events are then read from the ledger afterwards. */
  private blocked = false;
  /** A ledger read is queued behind the current work for what arrived live while blocked. */
  private catchUpQueued = false;
  private readonly heartbeatMs: number;
  private readonly stallMs: number;
  private readonly onStall: (() => void) | undefined;

  constructor(
    private readonly ledger: StreamLedger,
    private readonly sessionId: string,
    after: number,
    opts: SessionStreamOptions = {},
  ) {
    this.lastSent = after;
    this.heartbeatMs = opts.heartbeatMs ?? HEARTBEAT_MS;
    this.stallMs = opts.stallMs ?? 30_000;
    this.onStall = opts.onStall;
  }

  /** Bytes this stream holds that its client has not taken (the socket's own buffer apart). */
  get backlogBytes(): number {
    return this.out.writableLength + this.out.readableLength + this.buffered.length;
  }

  /** Called with each live batch of this session's envelopes (one turn's), in order. */
  onLive(batch: readonly LiveEnvelope[]): void {
    if (batch.length === 0 || this.closed) return;
    if (this.backfilling) {
      if (this.missedLive) return;
      this.pending.push(...batch);
      if (this.pending.length > PENDING_MAX) {
        this.pending = [];
        this.missedLive = true;
      }
      return;
    }
    if (this.blocked) return this.catchUp();
    this.chain = this.chain.then(() => this.deliver(batch)).catch(() => this.close());
  }

  /** Sends the ledger after the cursor, then whatever arrived live meanwhile. */
  async start(): Promise<void> {
    this.out.write(': connected\n\n');
    // A client that is behind gets no heartbeat: its connection is plainly alive, and the comment would only queue.
    this.heartbeat = setInterval(() => this.blocked || this.out.writableNeedDrain || this.out.write(': heartbeat\n\n'), this.heartbeatMs);
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
   * The live feed was interrupted (Redis's subscriber reconnected), or live
   * events came while the client was behind: what was published meanwhile is
   * not here, and a session that went still would leave the stream short of
   * its ledger's end for good. Reads it from the ledger, once for any number
   * of calls while it waits its turn.
   */
  catchUp(): void {
    if (this.closed) return;
    if (this.backfilling) {
      this.missedLive = true;
      return;
    }
    if (this.catchUpQueued) return;
    this.catchUpQueued = true;
    this.chain = this.chain
      .then(() => {
        this.catchUpQueued = false;
        return this.repairUpTo(Number.MAX_SAFE_INTEGER);
      })
      .catch(() => this.close());
  }

  private async deliver(batch: readonly LiveEnvelope[]): Promise<void> {
    for (const { ev, json } of batch) {
      if (this.closed || ev.sequence_number <= this.lastSent) continue;
      if (ev.sequence_number > this.lastSent + 1) {
        // Nothing stays buffered across a wait: the records go out in order, and a drain meanwhile loses none.
        await this.flush();
        await this.repairUpTo(ev.sequence_number - 1);
      }
      this.send(ev, json);
    }
    await this.flush();
  }

  private async repairUpTo(limit: number): Promise<void> {
    while (!this.closed && this.lastSent < limit) {
      const docs = await this.ledger.after(this.sessionId, this.lastSent, BACKFILL_PAGE, this.backfilling);
      const wanted = docs.filter((d) => d.sequence_number <= limit);
      for (const d of wanted) {
        const ev = envelope(d);
        this.send(ev, JSON.stringify(ev));
        if (this.buffered.length >= WRITE_BYTES) await this.flush();
      }
      await this.flush();
      if (docs.length < BACKFILL_PAGE || wanted.length < docs.length) return;
    }
  }

  /** An ephemeral record (live token deltas): no id, so it is never part of a resume; a client that is behind misses it. */
  sendEphemeral(type: string, data: string): void {
    if (!this.closed && !this.backfilling && !this.blocked && !this.out.writableNeedDrain) this.out.write(`event: ${type}\ndata: ${data}\n\n`);
  }

  private send(ev: EventEnvelope, json: string): void {
    if (this.closed || ev.sequence_number !== this.lastSent + 1) return;
    this.lastSent = ev.sequence_number;
    this.buffered += record(ev, json);
  }

  /** Writes what is buffered; when the response cannot take more, waits until the client has read it. */
  private async flush(): Promise<void> {
    if (this.closed || !this.buffered) return;
    const ok = this.out.write(this.buffered);
    this.buffered = '';
    if (!ok) await this.drained();
  }

  private drained(): Promise<void> {
    this.blocked = true;
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.out.off('drain', done);
        this.out.off('close', done);
        this.blocked = false;
        resolve();
      };
      const timer = setTimeout(() => {
        done();
        if (!this.closed) this.onStall ? this.onStall() : this.close();
      }, this.stallMs);
      this.out.on('drain', done);
      this.out.on('close', done);
    });
  }

  /**
   * Ends the stream for a shutdown or a client that fell behind: a `retry:`
   * field sets how soon the client's EventSource reconnects (to another
   * process, with Last-Event-ID, so nothing is lost), then a clean end of the response.
   */
  drain(retryMs: number, why = 'server shutting down'): void {
    if (this.closed) return;
    this.out.write(`retry: ${retryMs}\n: ${why}; reconnect to resume\n\n`);
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
