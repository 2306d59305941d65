import type { Collection, Db, Filter, FindCursor } from 'mongodb';
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

  /** Records of an org in [from, to), optionally of one session, as a cursor to stream; hours are the unit, so `from` is rounded down. */
  range(orgId: string, from: Date | null, to: Date | null, sessionId?: string): FindCursor<UsageDoc> {
    const filter: Filter<UsageDoc> = { org_id: orgId };
    if (sessionId) filter.session_id = sessionId;
    const hour: Record<string, Date> = {};
    if (from) hour.$gte = hourOf(from);
    if (to) hour.$lt = to;
    if (from || to) filter.hour = hour;
    return this.col.find(filter);
  }
}
