import { UpstreamError } from '../llm/errors.js';
import type { Cancel } from '../llm/upstream-post.js';

/**
 * One candidate's attempt under ROUTER_ATTEMPT_TIMEOUT_MS: the caller's cancellation, plus a timer that cancels the
 * attempt when it has not committed in time (a stream's first content, a buffered call's answer). A hung upstream
 * then costs the call that long, not the HTTP client's minutes, and counts as a failure on its circuit breaker. Once
 * committed the timer is gone, but the call keeps running under this signal (a stream reads on with it), so the
 * caller's hang-up is still passed on.
 */
export class AttemptDeadline implements Cancel {
  expired = false;
  private timer: NodeJS.Timeout | null;
  private listeners: (() => void)[] = [];
  private readonly timeoutError: UpstreamError;

  constructor(
    private readonly parent: Cancel | undefined,
    ms: number,
    model: string,
  ) {
    this.timeoutError = new UpstreamError(`no answer within ${ms} ms (ROUTER_ATTEMPT_TIMEOUT_MS) from ${model}`, true);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.expired = true;
      this.fire();
    }, ms);
    parent?.addEventListener('abort', () => this.fire(), { once: true });
  }

  get aborted(): boolean {
    return this.expired || (this.parent?.aborted ?? false);
  }

  get reason(): unknown {
    return this.expired ? this.timeoutError : this.parent?.reason;
  }

  /** The attempt committed or failed: the timer no longer applies. */
  committed(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    this.listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const i = this.listeners.indexOf(listener);
    if (i >= 0) this.listeners.splice(i, 1);
  }

  private fire(): void {
    const fns = this.listeners;
    this.listeners = [];
    for (const fn of fns) fn();
  }
}
