import type { Collection, Db, Filter } from 'mongodb';
import { newId } from '../domain/ids.js';
import type { DeliveryAttempt, DeliveryStatus, WebhookDeliveryDoc } from '../domain/views/webhook-delivery.js';
import { isDuplicateKey } from './duplicate-key.js';

export type NewDelivery = Pick<WebhookDeliveryDoc, 'org_id' | 'agent_id' | 'event_id' | 'event_type' | 'session_id' | 'message_id' | 'batch_id' | 'body'>;

/** Attempts a delivery's log keeps, the latest; `attempt_count` counts them all. */
export const ATTEMPT_LOG_MAX = 100;

/** What an attempt changes besides appending itself. */
export interface AttemptUpdate {
  status: DeliveryStatus;
  next_attempt_at: Date | null;
}

/**
 * The delivery log (`webhook_deliveries`). Hot-path reads and writes go by
 * `_id`; a unique (org, event id) index makes a second delivery of the same
 * event impossible, whoever enqueued it.
 */
export class WebhookDeliveryStore {
  readonly col: Collection<WebhookDeliveryDoc>;

  constructor(db: Db) {
    this.col = db.collection<WebhookDeliveryDoc>('webhook_deliveries');
  }

  /**
   * Logs a delivery together with its first attempt, in one write: the
   * attempt is sent before the delivery is logged, so the hot path costs one
   * insert. If the event was logged already (a job re-run after a crash, or
   * the event enqueued twice), the attempt is added to that delivery instead.
   */
  async insertWithAttempt(d: NewDelivery, attempt: Omit<DeliveryAttempt, 'number'>, update: AttemptUpdate): Promise<WebhookDeliveryDoc> {
    const doc: WebhookDeliveryDoc = {
      _id: newId('delivery'),
      ...d,
      status: update.status,
      attempts: [{ ...attempt, number: 1 }],
      attempt_count: 1,
      last_status_code: attempt.status_code,
      last_error: attempt.error,
      last_attempt_at: attempt.attempted_at,
      next_attempt_at: update.next_attempt_at,
      created_at: attempt.attempted_at,
      updated_at: attempt.attempted_at,
      completed_at: update.status === 'pending' ? null : attempt.attempted_at,
    };
    try {
      await this.col.insertOne(doc);
      return doc;
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      // Rare, so the slow non-_id read (FerretDB v1 scans) is fine here.
      const existing = await this.col.findOne({ org_id: d.org_id, event_id: d.event_id });
      if (!existing) throw err;
      await this.recordAttempt(existing._id, existing.attempt_count + 1, attempt, update);
      return { ...existing, attempt_count: existing.attempt_count + 1 };
    }
  }

  /** Unscoped read by id for the actor, which acts on ids it created. */
  byId(id: string): Promise<WebhookDeliveryDoc | null> {
    return this.col.findOne({ _id: id });
  }

  async get(orgId: string, agentId: string, id: string): Promise<WebhookDeliveryDoc | null> {
    const d = await this.byId(id);
    return d && d.org_id === orgId && d.agent_id === agentId ? d : null;
  }

  /** Newest first; `after` is the id of the last delivery of the previous page. */
  list(orgId: string, agentId: string, limit: number, after: string | null): Promise<WebhookDeliveryDoc[]> {
    const filter: Filter<WebhookDeliveryDoc> = { org_id: orgId, agent_id: agentId };
    if (after) filter._id = { $lt: after };
    return this.col.find(filter, { projection: { body: 0, attempts: 0 } }).sort({ _id: -1 }).limit(limit + 1).toArray();
  }

  /**
   * Appends attempt `number` and moves the status; one write, by `_id`. The
   * log keeps the latest ATTEMPT_LOG_MAX attempts: the schedule makes 13, but
   * client redeliveries have no end, and a document that grew past 16 MiB
   * could no longer be written at all. FerretDB v1 ignores `$slice`; past the
   * cap a conditional `$pop` trims what it left (a no-op where `$slice` held).
   */
  async recordAttempt(id: string, number: number, attempt: Omit<DeliveryAttempt, 'number'>, update: AttemptUpdate): Promise<void> {
    await this.col.updateOne(
      { _id: id },
      {
        $push: { attempts: { $each: [{ ...attempt, number }], $slice: -ATTEMPT_LOG_MAX } },
        $set: {
          attempt_count: number,
          status: update.status,
          last_status_code: attempt.status_code,
          last_error: attempt.error,
          last_attempt_at: attempt.attempted_at,
          next_attempt_at: update.next_attempt_at,
          updated_at: attempt.attempted_at,
          completed_at: update.status === 'pending' ? null : attempt.attempted_at,
        },
      },
    );
    if (number > ATTEMPT_LOG_MAX) await this.col.updateOne({ _id: id, [`attempts.${ATTEMPT_LOG_MAX}`]: { $exists: true } }, { $pop: { attempts: -1 } });
  }

  /** Ends a pending delivery without an attempt (its webhook was removed or unsubscribed meanwhile). */
  async finish(id: string, status: DeliveryStatus, reason: string, now = new Date()): Promise<void> {
    await this.col.updateOne({ _id: id, status: 'pending' }, { $set: { status, last_error: reason, next_attempt_at: null, updated_at: now, completed_at: now } });
  }

  /** Removes finished deliveries older than `before` from the log. */
  async reapFinished(before: Date): Promise<number> {
    const r = await this.col.deleteMany({ status: { $ne: 'pending' }, completed_at: { $lt: before } });
    return r.deletedCount;
  }
}
