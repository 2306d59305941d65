import type { Logger } from '../log/logger.js';
import type { UsageStore } from '../store/usage.js';

interface Pending {
  orgId: string;
  routerId: string;
  model: string;
  requests: number;
  input: number;
  output: number;
}

/**
 * Sums token counts in memory and writes them once a second, so a routed
 * call costs no Mongo round trip of its own. A crash loses at most one
 * interval of counts; close() writes what is left.
 */
export class UsageBuffer {
  private pending = new Map<string, Pending>();
  private readonly timer: NodeJS.Timeout;
  private closing: Promise<void> | null = null;

  constructor(
    private readonly store: UsageStore,
    private readonly log: Logger,
    intervalMs = 1000,
  ) {
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
  }

  add(orgId: string, routerId: string, model: string, input: number, output: number): void {
    const key = `${orgId}\u0000${routerId}\u0000${model}`;
    const p = this.pending.get(key);
    if (p) {
      p.requests++;
      p.input += input;
      p.output += output;
    } else this.pending.set(key, { orgId, routerId, model, requests: 1, input, output });
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = [...this.pending.values()];
    this.pending = new Map();
    await Promise.all(
      batch.map((p) => this.store.record(p.orgId, p.routerId, p.model, p.input, p.output, new Date(), p.requests).catch((err) => this.log.warn({ err }, 'could not record routing usage'))),
    );
  }

  close(): Promise<void> {
    clearInterval(this.timer);
    return (this.closing ??= this.flush());
  }
}
