import type { Collection, Db } from 'mongodb';
import { byId } from './shard-keys.js';
import { insertEach } from './insert-each.js';
import { eventId, type EventEnvelope, type EventType, type NewEvent } from '../domain/ledger.js';
import type { EventData } from '../domain/event-data.js';
import { wellFormedJson } from '../domain/well-formed.js';

/**
 * A ledger row: the envelope plus bookkeeping that never leaves the server.
 * `data` is kept as JSON text: it carries client JSON (tool arguments and
 * results) with nested arrays and `$` keys, which FerretDB v1 cannot store.
 */
export interface EventDoc extends Omit<EventEnvelope, 'id' | 'created_at' | 'data'> {
  _id: string;
  org_id: string;
  data_json: string;
  created_at: Date;
  /** Command that produced this event; set on the first event of each turn. */
  command_id?: string;
  /** Effects of that turn (JSON), so a redelivered command can re-issue them. */
  effects_json?: string;
  /**
   * Set on that first event when the turn's reply is a later event of the turn
   * (a cancel answers with the message's status change, after the tool calls it
   * failed): a repeated command is answered with the same event as the first time.
   */
  reply_offset?: number;
}

export function toEventDoc(orgId: string, sessionId: string, sequence: number, e: NewEvent, now: Date, turn: { command_id?: string; effects?: unknown[]; reply_offset?: number | null }): EventDoc {
  const doc: EventDoc = {
    _id: eventId(sessionId, sequence),
    org_id: orgId,
    session_id: sessionId,
    sequence_number: sequence,
    message_id: e.message_id,
    type: e.type,
    source: e.source,
    actor: e.actor,
    // Model output and tool results can hold a lone surrogate; the ledger's text never does (strict parsers refuse it).
    data_json: wellFormedJson(e.data),
    created_at: now,
  };
  if (turn.command_id) doc.command_id = turn.command_id;
  if (turn.effects) doc.effects_json = wellFormedJson(turn.effects);
  if (turn.reply_offset) doc.reply_offset = turn.reply_offset;
  return doc;
}

export function envelope(doc: EventDoc): EventEnvelope {
  return {
    id: doc._id,
    session_id: doc.session_id,
    sequence_number: doc.sequence_number,
    message_id: doc.message_id,
    type: doc.type,
    source: doc.source,
    actor: doc.actor,
    // Written from a NewEvent of this type (toEventDoc): its data is that type's.
    data: JSON.parse(doc.data_json) as EventData[EventType],
    created_at: doc.created_at.toISOString(),
  } as EventEnvelope;
}

export function effectsOf(doc: EventDoc): unknown[] {
  return doc.effects_json ? (JSON.parse(doc.effects_json) as unknown[]) : [];
}

const ENVELOPE_PROJECTION = { effects_json: 0, reply_offset: 0, org_id: 0 } as const;

/**
 * The append-only ledger. The unique (session_id, sequence_number) index is
 * the fence: two writers cannot both take a sequence number.
 */
export class LedgerStore {
  readonly col: Collection<EventDoc>;

  constructor(
    db: Db,
    private readonly sharded = false,
  ) {
    this.col = db.collection<EventDoc>('events');
  }

  /** Appends a turn's events in order; a duplicate key error means another turn got there first. */
  async append(docs: EventDoc[]): Promise<void> {
    if (docs.length) await this.col.insertMany(docs, { ordered: true });
  }

  /** Inserts the events of new sessions (batch creation), unordered; the indexes of those that failed. */
  insertEach(docs: EventDoc[]): Promise<Set<number>> {
    return insertEach(this.col, docs);
  }

  /**
   * Events after `afterSequence`, in order, at most `limit`. Reads by `_id`
   * (`<session_id>:<n>`) in growing parallel probes and stops at the first
   * hole: FerretDB v1 pushes only `_id` equality down to SQLite, so this stays
   * fast however large the ledger grows (on MongoDB it is equally cheap).
   * On sharded MongoDB the filters name session_id too, the shard key, so each
   * read goes to one shard instead of all (byId in shard-keys.ts).
   */
  async after(sessionId: string, afterSequence: number, limit: number): Promise<EventDoc[]> {
    const out: EventDoc[] = [];
    let probe = 1;
    while (out.length < limit) {
      const n = Math.min(probe, limit - out.length);
      const base = afterSequence + out.length;
      const docs = await Promise.all(Array.from({ length: n }, (_, i) => this.col.findOne(this.byId(sessionId, base + i + 1), { projection: ENVELOPE_PROJECTION })));
      for (const d of docs) {
        if (!d) return out;
        out.push(d);
      }
      probe = Math.min(probe * 4, 64);
    }
    return out;
  }

  /** One event with its bookkeeping (command id, effects). */
  get(sessionId: string, sequence: number): Promise<EventDoc | null> {
    return this.col.findOne(this.byId(sessionId, sequence));
  }

  private byId(sessionId: string, sequence: number) {
    return byId(`${sessionId}:${sequence}`, { session_id: sessionId }, this.sharded);
  }

  /** Removes a deleted session's whole ledger. */
  async removeSession(sessionId: string): Promise<number> {
    return (await this.col.deleteMany({ session_id: sessionId })).deletedCount;
  }

}
