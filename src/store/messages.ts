import type { AnyBulkWriteOperation, Collection, Db } from 'mongodb';
import { byId } from './shard-keys.js';
import { insertEach } from './insert-each.js';
import type { MessageState } from '../domain/ledger.js';
import { wellFormedJson } from '../domain/well-formed.js';
import type { MessageDoc } from '../domain/views/message.js';

/**
 * The `messages` read model: one document per user turn, with the assistant
 * output embedded. On sharded MongoDB every filter names session_id, the
 * shard key (byId in src/store/shard-keys.ts): each read goes to one shard,
 * and the upserts are accepted (an upsert without the shard key is refused).
 */
export class MessageStore {
  readonly col: Collection<MessageDoc>;

  constructor(
    db: Db,
    private readonly sharded = false,
  ) {
    this.col = db.collection<MessageDoc>('messages');
  }

  /** Inserts the first messages of new sessions (batch creation), unordered; the indexes of those that failed. */
  insertEach(docs: MessageDoc[]): Promise<Set<number>> {
    return insertEach(this.col, docs);
  }

  async get(orgId: string, sessionId: string, id: string): Promise<MessageDoc | null> {
    const m = await this.col.findOne(byId(id, { session_id: sessionId }, this.sharded));
    return m && m.org_id === orgId && m.session_id === sessionId ? m : null;
  }

  /** By `_id`, in one round trip. */
  async byIds(sessionId: string, ids: string[]): Promise<MessageDoc[]> {
    if (!ids.length) return [];
    const docs = ids.length === 1 ? [await this.col.findOne(byId(ids[0], { session_id: sessionId }, this.sharded))] : await this.col.find(byId({ $in: ids }, { session_id: sessionId }, this.sharded)).toArray();
    return docs.filter((d): d is MessageDoc => d !== null && d.session_id === sessionId);
  }

  list(orgId: string, sessionId: string, limit: number, afterSequence: number): Promise<MessageDoc[]> {
    return this.col
      .find({ org_id: orgId, session_id: sessionId, sequence_number: { $gt: afterSequence } })
      .sort({ sequence_number: 1 })
      .limit(limit + 1)
      .toArray();
  }

  /** Removes a deleted session's messages. */
  async removeSession(sessionId: string): Promise<number> {
    return (await this.col.deleteMany({ session_id: sessionId })).deletedCount;
  }

  /**
   * The upserts that save messages; the projection writer sends many turns' in one bulkWrite.
   * Fenced by `last_sequence`: a write of an older state than the stored one matches nothing, and
   * its upsert then hits the _id (a duplicate key the projection writer ignores once it sees the newer state stored). Such a write
   * is one a partition held: the worker that sent it lost its shard meanwhile, and the new owner has
   * saved a newer state since (a stored message without the field takes any write).
   */
  saveOps(orgId: string, messages: MessageState[]): AnyBulkWriteOperation<MessageDoc>[] {
    return messages.map(({ id, output, ...rest }) => {
      const filter = byId(id, { session_id: rest.session_id }, this.sharded);
      // Not newer than this state: at or below it, or absent (a message stored before the field).
      const fenced = rest.last_sequence === undefined ? filter : { ...filter, last_sequence: { $not: { $gt: rest.last_sequence } } };
      return { replaceOne: { filter: fenced, replacement: { ...rest, output_json: wellFormedJson(output), org_id: orgId }, upsert: true } };
    });
  }
}
