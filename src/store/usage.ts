import type { Collection, Db } from 'mongodb';

export interface UsageDoc {
  _id: string;
  org_id: string;
  router_id: string;
  model: string;
  /** Start of the UTC hour the tokens were used in. */
  hour: Date;
  requests: number;
  input_tokens: number;
  output_tokens: number;
}

/**
 * Token counts per org, router, model and hour. One upsert with $inc per
 * call; the deterministic _id makes concurrent first writes converge without
 * a unique index race.
 */
export class UsageStore {
  private readonly col: Collection<UsageDoc>;

  constructor(db: Db) {
    this.col = db.collection<UsageDoc>('usage');
  }

  async record(orgId: string, routerId: string, model: string, input: number, output: number, at = new Date(), requests = 1): Promise<void> {
    const hour = new Date(Math.floor(at.getTime() / 3_600_000) * 3_600_000);
    const _id = `${orgId}:${routerId}:${model}:${hour.toISOString()}`;
    const filter = { _id };
    const update = { $inc: { requests, input_tokens: input, output_tokens: output }, $setOnInsert: { org_id: orgId, router_id: routerId, model, hour } };
    try {
      await this.col.updateOne(filter, update, { upsert: true });
    } catch (e) {
      // Two first writers raced on the same _id; the loser's retry is a plain update.
      if ((e as { code?: number }).code !== 11000) throw e;
      await this.col.updateOne(filter, update, { upsert: true });
    }
  }

  list(orgId: string, routerId?: string): Promise<UsageDoc[]> {
    return this.col.find(routerId ? { org_id: orgId, router_id: routerId } : { org_id: orgId }).sort({ hour: 1, model: 1 }).toArray();
  }
}
