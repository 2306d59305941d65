import { MongoBulkWriteError, type AnyBulkWriteOperation } from 'mongodb';
import { isDuplicateKey } from './duplicate-key.js';
import type { MessageState, SessionState } from '../domain/ledger.js';
import { FLUSH_TIMEOUT_MS, GroupCommit, type Pending } from './group-commit.js';
import type { MessageStore } from './messages.js';
import type { MessageDoc } from '../domain/views/message.js';
import type { SessionStore } from './sessions.js';
import type { SessionDoc } from '../domain/views/session.js';

interface Projection {
  orgId: string;
  session: SessionState;
  messages: MessageState[];
  afterMessages?: () => void;
}

/**
 * The messages a bulk write refused with a duplicate key, when that is all
 * that went wrong: every other write was applied. Null for any other error,
 * a network error above all: the driver reports a connection lost mid-write
 * as a MongoBulkWriteError with no write errors, and that write must fail the
 * turn (the MongoDB-restart fault test caught it counted as "nothing refused",
 * which left a completed message `running` in the read model for good).
 */
export function fenceRefusals(err: unknown, written: readonly MessageState[]): MessageState[] | null {
  if (!(err instanceof MongoBulkWriteError) || err.writeConcernError) return null;
  const errors = [err.writeErrors].flat();
  if (!errors.length || (err.result?.matchedCount ?? 0) + (err.result?.upsertedCount ?? 0) + errors.length !== written.length) return null;
  const refused = errors.map((e) => (isDuplicateKey(e) ? written[e.index] : undefined));
  return refused.every((m): m is MessageState => m?.last_sequence !== undefined) ? refused : null;
}

/**
 * Writes the session and message read models of many turns in one bulkWrite
 * per collection. Only a session's own actor writes its projection, one turn
 * at a time, after winning the ledger's sequence fence. That alone does not
 * order the writes: a write sent before a partition can reach the server
 * after it healed, when another worker has long taken the shard over and
 * saved newer states (the fault suite's MongoDB partition rolled completed
 * messages back to running that way). So each write is fenced by the
 * state's `last_sequence` and an older one changes nothing. A turn hands
 * off (answers, publishes) once its messages are written, so a client that
 * sees an event reads the messages that include it; the session document may
 * lag that by its own write.
 */
export class ProjectionWriter {
  private readonly commits: GroupCommit<Projection>;

  constructor(
    private readonly sessions: SessionStore,
    private readonly messages: MessageStore,
  ) {
    this.commits = new GroupCommit((batch) => this.write(batch));
  }

  /**
   * `afterMessages` runs once the messages are written, as the session write
   * starts: the session actor hands off its answer, events and jobs then, so
   * a client that reads the message it was just told about finds it.
   */
  save(orgId: string, session: SessionState, messages: MessageState[], afterMessages?: () => void): Promise<void> {
    return this.commits.submit({ orgId, session: structuredClone(session), messages: structuredClone(messages), afterMessages });
  }

  /**
   * Whether every message write the server refused lost the `last_sequence` fence
   * (MessageStore.saveOps): a duplicate key on a message stored with a newer
   * state than the one written. Any other refusal is a real failure.
   */
  private async onlyStale(err: unknown, written: MessageState[]): Promise<boolean> {
    const refused = fenceRefusals(err, written);
    if (!refused) return false;
    const stored = await this.messages.col.find({ _id: { $in: refused.map((m) => m.id) } }, { projection: { last_sequence: 1 } }).toArray();
    const newer = new Map(stored.map((d) => [d._id, d.last_sequence ?? -1]));
    return refused.every((m) => (newer.get(m.id) ?? -1) > m.last_sequence!);
  }

  private async write(batch: Pending<Projection>[]): Promise<void> {
    const sessionOps: AnyBulkWriteOperation<SessionDoc>[] = batch.map(({ item }) => {
      const { id, ...rest } = item.session;
      return { updateOne: { filter: { _id: id, last_sequence: { $lte: rest.last_sequence } }, update: { $set: rest } } };
    });
    const messageOps: AnyBulkWriteOperation<MessageDoc>[] = batch.flatMap(({ item }) => this.messages.saveOps(item.orgId, item.messages));
    // Messages first, the sessions last: a session document that notes a command (recent_commands,
    // last_sequence) is the commit point, so a process that dies between the two writes leaves a
    // session the next turn catches up from the ledger, never one whose messages were not written
    // (a replay would answer without the message, and later commands would find it missing).
    if (messageOps.length) {
      await this.messages.col.bulkWrite(messageOps, { ordered: false, timeoutMS: FLUSH_TIMEOUT_MS }).catch(async (err: unknown) => {
        if (!(await this.onlyStale(err, batch.flatMap(({ item }) => item.messages)))) throw err;
      });
    }
    for (const { item } of batch) item.afterMessages?.();
    await this.sessions.col.bulkWrite(sessionOps, { ordered: false, timeoutMS: FLUSH_TIMEOUT_MS });
    for (const p of batch) p.resolve();
  }
}
