import type { Collection, Db, Document, Filter } from 'mongodb';
import { retryDuplicateUpsert } from './duplicate-key.js';

/** A per-million-token price; cost = tokens / 1e6 × price, in `currency`. */
export interface Price {
  input_price: number;
  output_price: number;
  currency: string;
}

/** Where model calls came from: the routing interface (router only) or a session's turns (agent and session). */
export interface UsageKey {
  orgId: string;
  routerId: string | null;
  agentId: string | null;
  sessionId: string | null;
  model: string;
  /** Null when no price is configured for the model; its calls are then counted as unpriced. */
  currency: string | null;
}

export interface UsageCounts {
  requests: number;
  input: number;
  output: number;
  /** In `currency` units; 0 when unpriced. */
  cost: number;
}

export interface UsageDoc {
  _id: string;
  org_id: string;
  router_id: string | null;
  agent_id?: string | null;
  session_id?: string | null;
  model: string;
  currency?: string | null;
  /** Start of the UTC hour the tokens were used in. */
  hour: Date;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cost?: number;
}

export function costOf(price: Price | null | undefined, input: number, output: number): number {
  return price ? (input * price.input_price + output * price.output_price) / 1_000_000 : 0;
}

function hourOf(at: Date): Date {
  return new Date(Math.floor(at.getTime() / 3_600_000) * 3_600_000);
}

/** Routing-interface records keep their original id form; session records add agent, session and currency. */
function idOf(k: UsageKey, hour: Date): string {
  const plain = k.agentId === null && k.sessionId === null && k.currency === null;
  if (plain) return `${k.orgId}:${k.routerId}:${k.model}:${hour.toISOString()}`;
  return [k.orgId, k.routerId ?? '-', k.agentId ?? '-', k.sessionId ?? '-', k.model, k.currency ?? '-', hour.toISOString()].join(':');
}

/**
 * Token counts and cost per org, source (router, or agent and session),
 * model, currency and UTC hour. One upsert with $inc per key; the
 * deterministic _id makes concurrent first writes converge without a unique
 * index race.
 */
export class UsageStore {
  readonly col: Collection<UsageDoc>;
  /** Whether the server sums a $group right; null until a range with a record has told (sumsInStore). */
  private grouping: boolean | null = null;

  constructor(db: Db) {
    this.col = db.collection<UsageDoc>('usage');
  }

  async add(key: UsageKey, counts: UsageCounts, at = new Date()): Promise<void> {
    const hour = hourOf(at);
    const filter = { _id: idOf(key, hour) };
    const update = {
      $inc: { requests: counts.requests, input_tokens: counts.input, output_tokens: counts.output, cost: counts.cost },
      $setOnInsert: { org_id: key.orgId, router_id: key.routerId, agent_id: key.agentId, session_id: key.sessionId, model: key.model, currency: key.currency, hour },
    };
    await retryDuplicateUpsert(() => this.col.updateOne(filter, update, { upsert: true }));
  }

  list(orgId: string, routerId?: string): Promise<UsageDoc[]> {
    return this.col.find(routerId ? { org_id: orgId, router_id: routerId } : { org_id: orgId }).sort({ hour: 1, model: 1 }).toArray();
  }

  /**
   * Sums of the range per key of `field` and per currency, in key order (null
   * first), only keys after `after` when given. Summed in the store where the
   * server sums right (sumsInStore); else each record is its own sum, in the
   * same order, and the caller folds consecutive rows of one key. Either way a
   * caller that stops after a page stops the read.
   */
  async *sums(range: UsageRange, field: UsageField, after?: { key: string | null }): AsyncGenerator<UsageSum> {
    const filter = this.filterOf(range);
    // A null key sorts first, so after it come the strings; {$gt} on a string never matches null.
    if (after) (filter as Record<string, unknown>)[field] = after.key === null ? { $gte: '' } : { $gt: after.key };
    if (await this.sumsInStore(filter)) {
      const pipeline = [{ $match: filter }, { $group: { _id: { k: `$${field}`, c: '$currency' }, ...SUMS } }, { $sort: { '_id.k': 1, '_id.c': 1 } }];
      for await (const g of this.col.aggregate(pipeline, { allowDiskUse: true })) yield sumOf(g._id.k, g._id.c, g);
    } else {
      for await (const d of this.col.find(filter, { projection: { [field]: 1, ...FIGURES } }).sort({ [field]: 1 })) yield sumOf(d[field], d.currency, d);
    }
  }

  /** Sums of the range per currency (key null), summed in the store where it sums right. */
  async *totals(range: UsageRange): AsyncGenerator<UsageSum> {
    const filter = this.filterOf(range);
    if (await this.sumsInStore(filter)) {
      for await (const g of this.col.aggregate([{ $match: filter }, { $group: { _id: '$currency', ...SUMS } }])) yield sumOf(null, g._id, g);
    } else {
      for await (const d of this.col.find(filter, { projection: FIGURES })) yield sumOf(null, d.currency, d);
    }
  }

  /** Records of an org in [from, to), optionally of one session; hours are the unit, so `from` is rounded down. */
  private filterOf({ orgId, from, to, sessionId }: UsageRange): Filter<UsageDoc> {
    const filter: Filter<UsageDoc> = { org_id: orgId };
    if (sessionId) filter.session_id = sessionId;
    const hour: Record<string, Date> = {};
    if (from) hour.$gte = hourOf(from);
    if (to) hour.$lt = to;
    if (from || to) filter.hour = hour;
    return filter;
  }

  /**
   * Whether the server's $group sums every accumulator. FerretDB v1 gives the
   * group's documents to the first accumulator only (the rest sum nothing:
   * stages/group.go shares one iterator), so there the records are read and
   * summed by the caller. Asked of the range itself, with one record; known once
   * a range has one.
   */
  async sumsInStore(filter: Filter<UsageDoc>): Promise<boolean> {
    if (this.grouping !== null) return this.grouping;
    const [probe] = await this.col.aggregate([{ $match: filter }, { $limit: 1 }, { $group: { _id: null, a: { $sum: 1 }, b: { $sum: 1 } } }]).toArray();
    if (!probe) return false;
    return (this.grouping = probe.b === 1);
  }
}

export type UsageField = 'model' | 'agent_id' | 'session_id';

/** Which records a report reads: an org's (or one session's) in [from, to). */
export interface UsageRange {
  orgId: string;
  from: Date | null;
  to: Date | null;
  sessionId?: string;
}

/** Summed figures of one key and currency: one record, or records the store summed. */
export interface UsageSum {
  key: string | null;
  currency: string | null;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cost: number;
}

const FIGURES = { currency: 1, requests: 1, input_tokens: 1, output_tokens: 1, cost: 1 } as const;
const SUMS = { requests: { $sum: '$requests' }, input_tokens: { $sum: '$input_tokens' }, output_tokens: { $sum: '$output_tokens' }, cost: { $sum: '$cost' } };

/** Records of an earlier release lack agent_id, session_id, currency and cost: missing is null (or 0). */
function sumOf(key: unknown, currency: unknown, d: Document): UsageSum {
  return { key: (key as string | null | undefined) ?? null, currency: (currency as string | null | undefined) ?? null, requests: d.requests ?? 0, input_tokens: d.input_tokens ?? 0, output_tokens: d.output_tokens ?? 0, cost: d.cost ?? 0 };
}
