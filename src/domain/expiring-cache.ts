/**
 * A bounded in-process cache whose entries expire: the one shape behind every
 * "cached for a few seconds per process" lookup (keys, org limits, routers,
 * provider keys, sticky conversations). When full it is cleared rather than
 * evicting one entry at a time: the entries are cheap to refetch, and a clear
 * costs nothing on the hot path.
 */
export class ExpiringCache<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
  ) {}

  /** The value while it is fresh, else undefined. */
  get(key: string, now = Date.now()): V | undefined {
    const hit = this.entries.get(key);
    return hit && hit.until > now ? hit.value : undefined;
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  set(key: string, value: V, now = Date.now()): void {
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(key, { value, until: now + this.ttlMs });
  }
}
