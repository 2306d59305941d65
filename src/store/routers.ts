import type { Collection, Db } from 'mongodb';
import type { RouterDoc } from '../domain/views/router.js';
import { retryDuplicateUpsert } from './duplicate-key.js';

export type RouterInput = Pick<RouterDoc, 'default' | 'policy' | 'candidates' | 'prefer_low_latency'>;

/** Model routers (DESIGN §8); at most one per org is the default. */
export class RouterStore {
  private readonly col: Collection<RouterDoc>;

  constructor(db: Db) {
    this.col = db.collection<RouterDoc>('routers');
  }

  async put(orgId: string, routerId: string, input: RouterInput): Promise<RouterDoc> {
    const now = new Date();
    const doc = await retryDuplicateUpsert(() =>
      this.col.findOneAndUpdate(
        { org_id: orgId, router_id: routerId },
        { $set: { default: input.default, policy: input.policy, prefer_low_latency: input.prefer_low_latency !== false, candidates: input.candidates, updated_at: now }, $setOnInsert: { _id: `${orgId}:${routerId}`, org_id: orgId, router_id: routerId, created_at: now } },
        { upsert: true, returnDocument: 'after' },
      ),
    );
    // No transactions on FerretDB: the others are unset after the write, and
    // byDefault() breaks a momentary tie by the latest update.
    if (input.default) await this.col.updateMany({ org_id: orgId, router_id: { $ne: routerId }, default: true }, { $set: { default: false } });
    return doc!;
  }

  get(orgId: string, routerId: string): Promise<RouterDoc | null> {
    return this.col.findOne({ org_id: orgId, router_id: routerId });
  }

  async byDefault(orgId: string): Promise<RouterDoc | null> {
    const [doc] = await this.col.find({ org_id: orgId, default: true }).sort({ updated_at: -1 }).limit(1).toArray();
    return doc ?? null;
  }

  /** In router_id order; fetches `limit + 1` for pageOf. */
  list(orgId: string, limit: number, after: string | null): Promise<RouterDoc[]> {
    const filter = after ? { org_id: orgId, router_id: { $gt: after } } : { org_id: orgId };
    return this.col.find(filter).sort({ router_id: 1 }).limit(limit + 1).toArray();
  }

  /** Up to `limit` router ids whose candidates name the credential, in router_id order. */
  async naming(orgId: string, credential: string, limit: number): Promise<string[]> {
    const rows = await this.col.find({ org_id: orgId, 'candidates.api_key_credential': credential }, { projection: { _id: 0, router_id: 1 } }).sort({ router_id: 1 }).limit(limit).toArray();
    return rows.map((r) => r.router_id);
  }

  async delete(orgId: string, routerId: string): Promise<boolean> {
    return (await this.col.deleteOne({ org_id: orgId, router_id: routerId })).deletedCount === 1;
  }
}
