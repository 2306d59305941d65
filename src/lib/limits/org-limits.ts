import type { OrgLimits } from '../../domain/org-limits.js';
import { ExpiringCache } from '../../domain/expiring-cache.js';
import type { OrgStore } from '../../store/orgs.js';

const TTL_MS = 5000;
const MAX_CACHED = 10_000;

/**
 * An org's effective limits: its own where set, the environment's default
 * otherwise. Cached for a few seconds per process (like keys), so a change
 * made with the admin command applies everywhere within TTL_MS.
 */
export class OrgLimitsLookup {
  private readonly cache = new ExpiringCache<OrgLimits>(TTL_MS, MAX_CACHED);

  constructor(
    private readonly orgs: OrgStore,
    private readonly defaults: OrgLimits,
  ) {}

  /** The org's limits if this process has them at hand, without a lookup. */
  cached(orgId: string): OrgLimits | undefined {
    return this.cache.get(orgId);
  }

  forget(orgId: string): void {
    this.cache.delete(orgId);
  }

  async of(orgId: string): Promise<OrgLimits> {
    const hit = this.cache.get(orgId);
    if (hit) return hit;
    const doc = await this.orgs.byId(orgId);
    const limits = tightenTokens({ ...this.defaults, ...(doc?.limits ?? {}) }, doc?.tokens_per_min);
    this.cache.set(orgId, limits);
    return limits;
  }
}

/** The org's own tokens-per-minute limit applies only where it is tighter than the operator's (0 = unlimited). */
function tightenTokens(l: OrgLimits, own: number | null | undefined): OrgLimits {
  if (!own) return l;
  const op = l.routing_tokens_per_min ?? 0;
  return op > 0 && op <= own ? l : { ...l, routing_tokens_per_min: own };
}
