import { InvalidRequestError, NotFoundError } from '../../domain/errors.js';
import { ExpiringCache } from '../../domain/expiring-cache.js';
import { DEFAULT_BASE_URL } from '../../domain/providers.js';
import { UpstreamError } from '../llm/errors.js';
import type { Target } from '../llm/types.js';
import type { CandidateDoc, RouterDoc } from '../../domain/views/router.js';
import type { Stores } from '../../store/stores.js';

const TTL_MS = 1000;
const MAX_CACHED = 10_000;

/**
 * Router configs and provider keys, cached in-process for a second so the
 * hot path does not read Mongo (and decrypt) per request. Misses are not
 * cached: a router created a moment ago is found at once.
 */
export class RoutingLookup {
  private readonly routers = new ExpiringCache<RouterDoc>(TTL_MS, MAX_CACHED);
  private readonly secrets = new ExpiringCache<string>(5 * TTL_MS, MAX_CACHED);

  constructor(private readonly stores: Stores) {}

  async router(orgId: string, routerId: string | null): Promise<RouterDoc> {
    const doc = await this.find(orgId, routerId);
    if (doc) return doc;
    if (routerId) throw new NotFoundError('router', routerId);
    throw new InvalidRequestError('This organization has no default router; create one with PUT /v1/routers/{router_id} and "default": true, or address a router by id.', undefined, 'no_default_router');
  }

  /** The router, or the org's default one for null; null when there is none. */
  async find(orgId: string, routerId: string | null): Promise<RouterDoc | null> {
    const key = `${orgId}\u0000${routerId ?? ''}`;
    const hit = this.routers.get(key);
    if (hit) return hit;
    const doc = routerId ? await this.stores.routers.get(orgId, routerId) : await this.stores.routers.byDefault(orgId);
    if (doc) this.routers.set(key, doc);
    return doc;
  }

  /** The candidate's upstream; a promise only when its provider key is not cached, so a hit costs the caller no await. */
  target(orgId: string, c: CandidateDoc): Target | Promise<Target> {
    const apiKey = this.secrets.get(`${orgId}\u0000${c.api_key_credential}`);
    return apiKey === undefined ? this.reveal(orgId, c) : targetOf(c, apiKey);
  }

  private async reveal(orgId: string, c: CandidateDoc): Promise<Target> {
    const value = await this.stores.credentials.reveal(orgId, c.api_key_credential);
    // Retryable: another candidate may have its key.
    if (value === null) throw new UpstreamError(`candidate ${c.model} names credential ${c.api_key_credential}, which no longer exists`, true);
    this.secrets.set(`${orgId}\u0000${c.api_key_credential}`, value);
    return targetOf(c, value);
  }
}

function targetOf(c: CandidateDoc, apiKey: string): Target {
  return {
    provider: c.provider,
    model: c.upstream_model,
    baseUrl: c.base_url ?? DEFAULT_BASE_URL[c.provider],
    apiKey,
    configUpdates: c.configuration_update === true,
    adaptiveThinking: c.thinking_mode === 'adaptive',
  };
}
