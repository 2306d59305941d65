import type { Closeable } from '../../domain/closeable.js';
import type { Logger } from '../log/logger.js';

/**
 * Resources are registered in start order and closed in reverse: listeners
 * stop taking work first, actors drain, and the connections they use close
 * last. `close()` is idempotent and runs every step even when one fails.
 */
export class ShutdownList {
  private readonly items: Closeable[] = [];
  private closing: Promise<void> | null = null;

  constructor(private readonly log: Logger) {}

  add(item: Closeable): void {
    this.items.push(item);
  }

  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.closing = (async () => {
      for (const item of [...this.items].reverse()) {
        try {
          await item.close();
          this.log.debug({ resource: item.name }, 'closed');
        } catch (err) {
          this.log.error({ err, resource: item.name }, 'close failed');
        }
      }
    })();
    return this.closing;
  }
}

/** Wraps a close function so that repeated calls share one run. */
export function once(name: string, fn: () => Promise<void>): Closeable {
  let closing: Promise<void> | null = null;
  return {
    name,
    close: () => (closing ??= fn()),
  };
}
