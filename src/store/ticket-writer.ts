import { MongoBulkWriteError, type Collection } from 'mongodb';
import { ExpiringCache } from '../domain/expiring-cache.js';
import type { SettlementDoc } from './batches.js';
import { FLUSH_TIMEOUT_MS, GroupCommit, type Pending } from './group-commit.js';
import { isDuplicateKey } from './duplicate-key.js';

interface Ask {
  batchId: string;
  /** A ticket known to be taken (0: none). */
  hint: number;
  /** Set before the ask is resolved. */
  ticket?: number;
}

/** How long a process remembers the highest ticket it saw per batch; the header's hint covers the rest. */
const KNOWN_TTL_MS = 10 * 60_000;
const KNOWN_MAX = 1000;

/**
 * Takes settlement tickets `<batch_id>#<k>` for the batch actor, many at once.
 *
 * A ticket is taken by a unique insert, and tried only just above one known
 * to be taken, so the tickets taken are always 1..n without a gap (the count of
 * children settled). The settlements a process counts at the same time go out
 * as one ordered insertMany of consecutive tickets: the server stops at the
 * first one another process took, the asks before it have theirs, the rest try
 * again above it in the next flush. Before, each ask probed upwards from the
 * header's hint by itself, and 16 concurrent asks made about 15 inserts per
 * child (bench/batch).
 */
export class TicketWriter {
  private readonly commits: GroupCommit<Ask>;
  private readonly known = new ExpiringCache<number>(KNOWN_TTL_MS, KNOWN_MAX);

  constructor(
    private readonly settlements: Collection<SettlementDoc>,
    /** Raises the header's hint to a taken ticket (only ever up). */
    private readonly raiseHint: (batchId: string, ticket: number) => Promise<void>,
  ) {
    // One flush at a time: the asks that arrive meanwhile join the next one instead of racing it for the same tickets.
    this.commits = new GroupCommit((batch) => this.write(batch), 1);
  }

  async take(batchId: string, hint: number): Promise<number> {
    const ask: Ask = { batchId, hint };
    await this.commits.submit(ask);
    return ask.ticket!;
  }

  private async write(batch: Pending<Ask>[]): Promise<void> {
    const byBatch = new Map<string, Pending<Ask>[]>();
    for (const p of batch) {
      const asks = byBatch.get(p.item.batchId);
      if (asks) asks.push(p);
      else byBatch.set(p.item.batchId, [p]);
    }
    await Promise.all([...byBatch].map(([batchId, asks]) => this.writeBatch(batchId, asks)));
  }

  /** Settles every ask itself: resolved with a ticket, rejected, or put back for the next flush. */
  private async writeBatch(batchId: string, asks: Pending<Ask>[]): Promise<void> {
    const from = Math.max(this.known.get(batchId) ?? 0, ...asks.map((p) => p.item.hint)) + 1;
    const docs: SettlementDoc[] = asks.map((_, i) => ({ _id: `${batchId}#${from + i}`, batch_id: batchId, status: 'completed', counted: true }));
    let taken = asks.length;
    let failure: Error | null = null;
    try {
      await this.settlements.insertMany(docs, { ordered: true, timeoutMS: FLUSH_TIMEOUT_MS });
    } catch (err) {
      const first = err instanceof MongoBulkWriteError ? [err.writeErrors].flat()[0] : undefined;
      if (!first) failure = err as Error;
      else {
        taken = first.index;
        // Another process holds that ticket: the next try starts above it.
        if (isDuplicateKey(first)) this.known.set(batchId, Math.max(this.known.get(batchId) ?? 0, from + taken));
        else failure = err as Error;
      }
    }
    if (taken > 0) {
      const highest = from + taken - 1;
      this.known.set(batchId, Math.max(this.known.get(batchId) ?? 0, highest));
      try {
        await this.raiseHint(batchId, highest);
      } catch {
        // Only a hint: a lost raise costs later takers a probe.
      }
      asks.slice(0, taken).forEach((p, i) => {
        p.item.ticket = from + i;
        p.resolve();
      });
    }
    const rest = asks.slice(taken);
    if (failure) for (const p of rest) p.reject(failure);
    else if (rest.length) this.commits.retry(rest);
  }
}
