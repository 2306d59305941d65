import type { EventDoc, LedgerStore } from '../../../store/ledger.js';

/**
 * Ledger reads a process's streams may have running at once. The driver's pool
 * is 50 connections (store/mongo.ts): a reconnect's catch-up then takes at
 * most this many of them (a read's probes run in parallel, 1 for a stream with
 * nothing new), and a GET or a POST arriving during the burst queues behind at
 * most these instead of behind one read per open stream.
 */
export const STREAM_READS_IN_FLIGHT = 8;

type Read = Pick<LedgerStore, 'after'>;

interface Waiting {
  sessionId: string;
  after: number;
  limit: number;
  done: Promise<EventDoc[]>;
  resolve: (docs: EventDoc[]) => void;
  reject: (err: unknown) => void;
}

export interface StreamReadsObserver {
  /** A read was sent to the store (after sharing). */
  started(): void;
  /** How many reads wait for a turn (asked, not started). */
  waiting(n: number): void;
}

/**
 * The ledger as one process's streams read it: when the subscriber reconnects
 * every open stream reads what it missed at the same instant, one read each.
 * Here those reads wait for a turn, at most `inFlight` run at once, and reads
 * of the same session from the same sequence that wait together are one read,
 * its result handed to each (streams of one session that were all current ask
 * for the same thing). Only a read that has not started is joined: it starts
 * after everyone sharing it asked, so it sees everything each of them needs
 * (a read already running may have started before an event one of them waits
 * for was appended). A catch-up waits one turn of the event loop even when
 * there is room, so the requests of one burst, which arrive in one turn, meet.
 * A new stream's opening backfill does not: it comes alone (one request), and
 * starts at once when there is room and no read waits ahead of it.
 */
export class StreamLedgerReads implements Read {
  /** Reads not started yet, by session and sequence, oldest first (a Map keeps insertion order). */
  private readonly queue = new Map<string, Waiting>();
  private running = 0;
  private scheduled = false;

  constructor(
    private readonly ledger: Read,
    private readonly inFlight = STREAM_READS_IN_FLIGHT,
    private readonly observer?: StreamReadsObserver,
  ) {}

  /** `opening`: the read is a new stream's backfill, not a catch-up or a gap repair. */
  after(sessionId: string, after: number, limit: number, opening = false): Promise<EventDoc[]> {
    if (opening && this.queue.size === 0 && this.running < this.inFlight) return this.run(sessionId, after, limit);
    const key = `${sessionId}\u0000${after}\u0000${limit}`;
    const joined = this.queue.get(key);
    if (joined) return joined.done;
    let resolve!: Waiting['resolve'];
    let reject!: Waiting['reject'];
    const done = new Promise<EventDoc[]>((res, rej) => ((resolve = res), (reject = rej)));
    this.queue.set(key, { sessionId, after, limit, done, resolve, reject });
    this.observer?.waiting(this.queue.size);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.pump();
      });
    }
    return done;
  }

  private pump(): void {
    for (const [key, w] of this.queue) {
      if (this.running >= this.inFlight) break;
      this.queue.delete(key);
      this.run(w.sessionId, w.after, w.limit).then(w.resolve, w.reject);
    }
    this.observer?.waiting(this.queue.size);
  }

  private run(sessionId: string, after: number, limit: number): Promise<EventDoc[]> {
    this.running++;
    this.observer?.started();
    return this.ledger.after(sessionId, after, limit).finally(() => {
      this.running--;
      this.pump();
    });
  }
}
