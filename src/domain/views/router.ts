/** A model router as stored and as the API shows it. */
import type { DroppableParam, Effort, Provider } from '../providers.js';

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
  /** Among candidates the policy leaves equal, prefer the lower recent latency; absent means true. */
  prefer_low_latency?: boolean;
  candidates: CandidateDoc[];
  created_at: Date;
  updated_at: Date;
}

export function routerView(doc: RouterDoc): Record<string, unknown> {
  return {
    router_id: doc.router_id,
    default: doc.default,
    policy: doc.policy,
    prefer_low_latency: doc.prefer_low_latency !== false,
    candidates: doc.candidates,
    created_at: doc.created_at.toISOString(),
    updated_at: doc.updated_at.toISOString(),
  };
}
