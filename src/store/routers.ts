import type { Collection, Db } from 'mongodb';
import type { DroppableParam, Effort, Provider } from '../lib/llm/types.js';
import { retryDuplicateUpsert } from './duplicate-key.js';

export interface CandidateDoc {
  model: string;
  provider: Provider;
  upstream_model: string;
  base_url?: string;
  api_key_credential: string;
  reasoning_efforts: Effort[];
  tools: boolean;
  thinking: boolean;
  context_window: number;
  input_price: number;
  output_price: number;
  /** ISO 4217 code of the prices; USD when absent. */
  currency?: string;
  /** The model understands responses `configuration_update` items (openai-responses only). */
  configuration_update?: boolean;
  /** Parameters left out of every request to this model, which refuses them; none when absent. */
  drop_params?: DroppableParam[];
  /** How reasoning effort reaches an anthropic model: `budget` (an extended-thinking budget, when absent) or `adaptive`. */
  thinking_mode?: 'budget' | 'adaptive';
}

export type RoutingPolicy = 'priority' | 'cheapest';

export interface RouterDoc {
  _id: string;
  org_id: string;
  router_id: string;
  default: boolean;
  policy: RoutingPolicy;
  candidates: CandidateDoc[];
  created_at: Date;
  updated_at: Date;
}

export type RouterInput = Pick<RouterDoc, 'default' | 'policy' | 'candidates'>;

export function routerView(doc: RouterDoc): Record<string, unknown> {
  return {
    router_id: doc.router_id,
    default: doc.default,
    policy: doc.policy,
    candidates: doc.candidates,
    created_at: doc.created_at.toISOString(),
    updated_at: doc.updated_at.toISOString(),
  };
}

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
        { $set: { default: input.default, policy: input.policy, candidates: input.candidates, updated_at: now }, $setOnInsert: { _id: `${orgId}:${routerId}`, org_id: orgId, router_id: routerId, created_at: now } },
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
