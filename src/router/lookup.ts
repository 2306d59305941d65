import { InvalidRequestError, NotFoundError } from '../domain/errors.js';
import { DEFAULT_BASE_URL } from '../llm/client.js';
import { UpstreamError } from '../llm/errors.js';
import type { Target } from '../llm/types.js';
import type { CandidateDoc, RouterDoc } from '../store/routers.js';
import type { Stores } from '../store/stores.js';

const TTL_MS = 1000;

/**
 * Router configs and provider keys, cached in-process for a second so the
 * hot path does not read Mongo (and decrypt) per request. Misses are not
 * cached: a router created a moment ago is found at once.
 */
export class RoutingLookup {
  private readonly routers = new Map<string, { doc: RouterDoc; until: number }>();
  private readonly secrets = new Map<string, { value: string; until: number }>();

  constructor(private readonly stores: Stores) {}

  async router(orgId: string, routerId: string | null): Promise<RouterDoc> {
    const key = `${orgId}\u0000${routerId ?? ''}`;
    const now = Date.now();
    const hit = this.routers.get(key);
    if (hit && hit.until > now) return hit.doc;
    const doc = routerId ? await this.stores.routers.get(orgId, routerId) : await this.stores.routers.byDefault(orgId);
    if (!doc) {
      if (routerId) throw new NotFoundError('router', routerId);
      throw new InvalidRequestError('This organization has no default router; create one with PUT /v1/routers/{router_id} and "default": true, or address a router by id.', undefined, 'no_default_router');
    }
    if (this.routers.size > 10_000) this.routers.clear();
    this.routers.set(key, { doc, until: now + TTL_MS });
    return doc;
  }

  async target(orgId: string, c: CandidateDoc): Promise<Target> {
    const key = `${orgId}\u0000${c.api_key_credential}`;
    const now = Date.now();
    let hit = this.secrets.get(key);
    if (!hit || hit.until <= now) {
      const value = await this.stores.credentials.reveal(orgId, c.api_key_credential);
      // Retryable: another candidate may have its key.
      if (value === null) throw new UpstreamError(`candidate ${c.model} names credential ${c.api_key_credential}, which no longer exists`, true);
      if (this.secrets.size > 10_000) this.secrets.clear();
      this.secrets.set(key, (hit = { value, until: now + 5 * TTL_MS }));
    }
    return {
      provider: c.provider,
      model: c.upstream_model,
      baseUrl: c.base_url ?? DEFAULT_BASE_URL[c.provider],
      apiKey: hit.value,
      configUpdates: c.configuration_update === true,
    };
  }
}
