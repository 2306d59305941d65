import { MongoBulkWriteError } from 'mongodb';
import { FLUSH_TIMEOUT_MS, GroupCommit, type Pending } from './group-commit.js';
import type { EventDoc, LedgerStore } from './ledger.js';
import { isDuplicateKey } from './duplicate-key.js';

/** What a turn gets when another writer holds its sequence number: a duplicate key, as from insertMany. */
export class DuplicateSequence extends Error {
  override name = 'DuplicateSequence';
  readonly code = 11000;
}

/**
 * Appends the events of many turns (of different sessions) in one ordered
 * insertMany. Ordered, so an insert stops at the first duplicate key exactly
 * as a turn's own insert would: the turns wholly before it are stored, the
 * turn it belongs to gets the duplicate key (the sequence fence), and the
 * turns after it are appended by the next flush.
 */
export class LedgerWriter {
  private readonly commits: GroupCommit<EventDoc[]>;

  constructor(private readonly ledger: LedgerStore) {
    this.commits = new GroupCommit((batch) => this.write(batch));
  }

  append(docs: EventDoc[]): Promise<void> {
    return docs.length ? this.commits.submit(docs) : Promise.resolve();
  }

  private async write(batch: Pending<EventDoc[]>[]): Promise<void> {
    const docs = batch.flatMap((p) => p.item);
    const owner = batch.flatMap((p) => p.item.map(() => p));
    try {
      await this.ledger.col.insertMany(docs, { ordered: true, timeoutMS: FLUSH_TIMEOUT_MS });
    } catch (err) {
      const first = err instanceof MongoBulkWriteError ? [err.writeErrors].flat()[0] : undefined;
      if (!first || !isDuplicateKey(first)) throw err;
      const failed = owner[first.index];
      const at = batch.indexOf(failed);
      for (const p of batch.slice(0, at)) p.resolve();
      failed.reject(new DuplicateSequence(`sequence ${docs[first.index]._id} already taken`));
      this.commits.retry(batch.slice(at + 1));
      return;
    }
    for (const p of batch) p.resolve();
  }
}
