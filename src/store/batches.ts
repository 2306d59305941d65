import type { Collection, Db } from 'mongodb';
import type { BatchCounts } from '../domain/batch-status.js';
import type { BatchItem } from '../domain/views/batch-item.js';
import { isDuplicateKey } from './duplicate-key.js';
import { TicketWriter } from './ticket-writer.js';

/**
 * The batch header. Kept small on purpose: the batch actor `$inc`s it once
 * per child, and FerretDB v1 rewrites the whole document on every update, so
 * the item results live in `batch_items` chunks instead.
 */
export interface BatchDoc {
  _id: string;
  org_id: string;
  agent_id: string;
  idempotency_key: string | null;
  /** The key, or the batch id when there is none: unique per org, and never null (a unique index would refuse two nulls). */
  key_slot: string;
  body_hash: string;
  /** `creating` until every session is written and the items stored. */
  state: 'creating' | 'ready';
  /** Set once the first-message commands are on the session queues. */
  woken: boolean;
  created_at: Date;
  item_count: number;
  chunk_count: number;
  created_count: number;
  rejected_count: number;
  /** Status as answered by the POST, so a replay answers the same. */
  initial_status: string | null;
  /** Highest settlement ticket seen (a hint); the terminal check verifies against settlements. */
  settled: number;
  terminal_fired: boolean;
  terminal_type: string | null;
  terminal_enqueued: boolean;
  /** The counts the terminal type was decided from; what the batch webhook's body carries. Absent on older batches. */
  terminal_counts?: BatchCounts | null;
}

interface ItemChunk {
  _id: string;
  batch_id: string;
  items_json: string;
}

/** One child's first settled message, recorded once per session (also holds the `<batch>#<k>` tickets and `<batch>#terminal`). */
export interface SettlementDoc {
  _id: string;
  batch_id: string;
  status: 'completed' | 'failed' | 'cancelled';
  counted: boolean;
}

/** Items per `batch_items` document at most. */
export const ITEMS_PER_CHUNK = 500;
/**
 * Bytes of item JSON per `batch_items` document at most. Counting items was
 * not enough: metadata values are limited in characters, and 500 items whose
 * values are 4-byte characters or JSON escapes came to over 16 MiB, which the
 * driver refused (with the sessions already created).
 */
export const CHUNK_MAX_BYTES = 4 * 1024 * 1024;

const HEADER_ONLY = { projection: { _id: 1, org_id: 1, agent_id: 1, state: 1, created_count: 1, rejected_count: 1, settled: 1, chunk_count: 1, terminal_fired: 1, terminal_type: 1, terminal_enqueued: 1 } } as const;

/** Batches, their item results and their children's settlements. Reads go by `_id` wherever the path is hot. */
export class BatchStore {
  readonly col: Collection<BatchDoc>;
  readonly chunks: Collection<ItemChunk>;
  readonly settlements: Collection<SettlementDoc>;
  private readonly tickets: TicketWriter;

  constructor(db: Db) {
    this.col = db.collection<BatchDoc>('batches');
    this.chunks = db.collection<ItemChunk>('batch_items');
    this.settlements = db.collection<SettlementDoc>('batch_settlements');
    // Only ever raises the hint; a lost write just costs later callers a probe.
    this.tickets = new TicketWriter(this.settlements, async (id, k) => {
      await this.col.updateOne({ _id: id }, { $max: { settled: k } });
    });
  }

  /** Inserts the header; a duplicate (org, key_slot) throws code 11000: another request has the key. */
  async claim(doc: BatchDoc): Promise<void> {
    await this.col.insertOne(doc);
  }

  /** Drops a header whose creation failed, freeing its idempotency key for the client's retry. */
  async release(id: string): Promise<void> {
    await this.col.deleteOne({ _id: id });
  }

  byKey(orgId: string, key: string): Promise<BatchDoc | null> {
    return this.col.findOne({ org_id: orgId, key_slot: key });
  }

  async get(orgId: string, id: string): Promise<BatchDoc | null> {
    const b = await this.col.findOne({ _id: id });
    return b && b.org_id === orgId ? b : null;
  }

  /** Header fields only, unscoped: for the batch actor, which acts on ids already authorised. */
  header(id: string): Promise<BatchDoc | null> {
    return this.col.findOne({ _id: id }, HEADER_ONLY) as Promise<BatchDoc | null>;
  }

  async saveItems(batchId: string, items: BatchItem[]): Promise<number> {
    const docs: ItemChunk[] = [];
    let chunk: string[] = [];
    let bytes = 0;
    const flush = () => {
      if (chunk.length) docs.push({ _id: `${batchId}:${docs.length}`, batch_id: batchId, items_json: `[${chunk.join(',')}]` });
      chunk = [];
      bytes = 0;
    };
    for (const item of items) {
      const json = JSON.stringify(item);
      const size = Buffer.byteLength(json);
      if (chunk.length >= ITEMS_PER_CHUNK || (chunk.length && bytes + size > CHUNK_MAX_BYTES)) flush();
      chunk.push(json);
      bytes += size + 1;
    }
    flush();
    if (docs.length) await this.chunks.insertMany(docs, { ordered: false });
    return docs.length;
  }

  async items(batch: Pick<BatchDoc, '_id' | 'chunk_count'>): Promise<BatchItem[]> {
    const ids = Array.from({ length: batch.chunk_count }, (_, i) => `${batch._id}:${i}`);
    const docs = await Promise.all(ids.map((id) => this.chunks.findOne({ _id: id })));
    return docs.flatMap((d) => (d ? (JSON.parse(d.items_json) as BatchItem[]) : []));
  }

  async markReady(id: string, fields: Pick<BatchDoc, 'chunk_count' | 'created_count' | 'rejected_count' | 'initial_status'>): Promise<void> {
    await this.col.updateOne({ _id: id }, { $set: { ...fields, state: 'ready' } });
  }

  async markWoken(id: string): Promise<void> {
    await this.col.updateOne({ _id: id }, { $set: { woken: true } });
  }

  /** Records a child's settlement; false when it was recorded before. */
  async recordSettlement(doc: SettlementDoc): Promise<boolean> {
    try {
      await this.settlements.insertOne(doc);
      return true;
    } catch (err) {
      if (isDuplicateKey(err)) return false;
      throw err;
    }
  }

  settlement(sessionId: string): Promise<SettlementDoc | null> {
    return this.settlements.findOne({ _id: sessionId });
  }

  async markCounted(sessionId: string): Promise<void> {
    await this.settlements.updateOne({ _id: sessionId }, { $set: { counted: true } });
  }

  /** Settlements of the given children, read by `_id` in parallel. */
  async settlementsOf(sessionIds: string[]): Promise<(SettlementDoc | null)[]> {
    return Promise.all(sessionIds.map((id) => this.settlements.findOne({ _id: id })));
  }

  /**
   * Takes the next settlement ticket, `<batch_id>#<k>`, by unique insert and
   * returns k, the number of children counted so far. FerretDB v1 applies
   * `$inc` and conditional updates as read-modify-write and loses some under
   * concurrency (measured: 50 concurrent `$inc` gave 42), but a unique `_id`
   * insert is atomic on both servers. Tickets are contiguous, since each is
   * tried only above one already taken (`hint`, a taken ticket, saves probes);
   * the process's concurrent takers share inserts (`TicketWriter`).
   */
  takeTicket(batchId: string, hint: number): Promise<number> {
    return this.tickets.take(batchId, hint);
  }

  /** Claims the one right to fire the terminal webhook, by unique insert; false when claimed before. */
  async claimTerminal(id: string, type: string, counts: BatchCounts | null): Promise<boolean> {
    try {
      await this.settlements.insertOne({ _id: `${id}#terminal`, batch_id: id, status: 'completed', counted: true });
    } catch (err) {
      if (isDuplicateKey(err)) return false;
      throw err;
    }
    await this.col.updateOne({ _id: id }, { $set: { terminal_fired: true, terminal_type: type, terminal_counts: counts } });
    return true;
  }

  async markEnqueued(id: string): Promise<void> {
    await this.col.updateOne({ _id: id }, { $set: { terminal_enqueued: true } });
  }
}
