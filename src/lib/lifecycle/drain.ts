/**
 * The moment a process starts shutting down, before anything is closed:
 * readiness turns 503, synchronous waits answer with what they have, and
 * long-lived streams tell their clients to reconnect elsewhere. Listeners
 * run once, synchronously, in registration order; one that throws does not
 * stop the others.
 */
export class Drain {
  private started = false;
  private readonly listeners = new Set<() => void>();

  get draining(): boolean {
    return this.started;
  }

  /** Runs `fn` when draining begins (soon, if it already has); returns a function that unregisters it. */
  onDrain(fn: () => void): () => void {
    if (this.started) {
      queueMicrotask(fn);
      return () => undefined;
    }
    this.listeners.add(fn);
    return () => void this.listeners.delete(fn);
  }

  begin(): void {
    if (this.started) return;
    this.started = true;
    for (const fn of [...this.listeners]) {
      try {
        fn();
      } catch {
        // A listener's failure must not keep the others from draining.
      }
    }
    this.listeners.clear();
  }
}
