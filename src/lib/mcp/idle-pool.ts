/**
 * Idle things (MCP sessions) kept for reuse under a key, bounded two ways: each is evicted after `idleMs` unused,
 * and past `max` the least recently released goes first. A thing is out of the pool while in use, so one user at a
 * time holds it; `evict` is handed everything that leaves other than by `take` (timeouts, overflow, drain).
 */
export class IdlePool<T> {
  /** Insertion order is release order: the first entry is the least recently used. */
  private readonly idle = new Map<T, { key: string; timer: NodeJS.Timeout }>();
  private drained = false;

  constructor(private readonly opts: { max: number; idleMs: number; evict: (item: T) => void }) {}

  get size(): number {
    return this.idle.size;
  }

  /** The most recently released item under `key`, now the caller's; undefined when none. */
  take(key: string): T | undefined {
    let found: T | undefined;
    for (const [item, entry] of this.idle) if (entry.key === key) found = item;
    if (found === undefined) return undefined;
    clearTimeout(this.idle.get(found)!.timer);
    this.idle.delete(found);
    return found;
  }

  /** Back into the pool for the next user under `key`; evicted at once when pooling is off or the pool drained. */
  give(key: string, item: T): void {
    if (this.drained || this.opts.max === 0) return this.opts.evict(item);
    const timer = setTimeout(() => {
      if (this.idle.get(item)?.timer !== timer) return;
      this.idle.delete(item);
      this.opts.evict(item);
    }, this.opts.idleMs).unref();
    this.idle.set(item, { key, timer });
    for (const [oldest, entry] of this.idle) {
      if (this.idle.size <= this.opts.max) break;
      clearTimeout(entry.timer);
      this.idle.delete(oldest);
      this.opts.evict(oldest);
    }
  }

  /** Evicts everything idle; whatever is given back later is evicted too (shutdown). */
  drain(): void {
    this.drained = true;
    for (const [item, entry] of this.idle) {
      clearTimeout(entry.timer);
      this.opts.evict(item);
    }
    this.idle.clear();
  }
}
