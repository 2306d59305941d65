/** What the session actor publishes when a message is cancelled. */
export interface MessageCancelled {
  session_id: string;
  message_id: string;
}

/** What an actor needs: register work for a message, release it when done. */
export interface CancelTracker {
  track(messageId: string): { signal: AbortSignal; release(): void };
}

export type Subscribe = (channel: string, listener: (message: string) => void) => Promise<() => void>;

/**
 * The work a worker process is doing for each message (model calls, tool
 * runs), so a cancellation published on Redis can abort it. One listener per
 * process; work registers before it starts and releases when it ends.
 */
export class CancelRegistry implements CancelTracker {
  private readonly running = new Map<string, Set<AbortController>>();
  private unsubscribe: (() => void) | null = null;

  /** Subscribes to the cancel channel; resolves once Redis confirms, so no later cancel is missed. */
  async listen(subscribe: Subscribe, channel: string): Promise<void> {
    this.unsubscribe = await subscribe(channel, (raw) => {
      try {
        this.cancel((JSON.parse(raw) as MessageCancelled).message_id);
      } catch {
        // Not ours to judge: a malformed message aborts nothing.
      }
    });
  }

  /** A signal that aborts when the message is cancelled; call release() when the work ends. */
  track(messageId: string): { signal: AbortSignal; release(): void } {
    const controller = new AbortController();
    let set = this.running.get(messageId);
    if (!set) this.running.set(messageId, (set = new Set()));
    set.add(controller);
    return {
      signal: controller.signal,
      release: () => {
        set.delete(controller);
        if (set.size === 0 && this.running.get(messageId) === set) this.running.delete(messageId);
      },
    };
  }

  cancel(messageId: string): number {
    const set = this.running.get(messageId);
    if (!set) return 0;
    for (const c of set) c.abort(new Error(`message ${messageId} was cancelled`));
    return set.size;
  }

  get size(): number {
    return this.running.size;
  }

  close(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
  }
}
