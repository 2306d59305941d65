import { RateLimitError } from '../domain/errors.js';
import type { Metrics } from '../metrics/metrics.js';
import type { SessionStore } from '../store/sessions.js';
import type { OrgLimitsLookup } from './org-limits.js';

/** How soon a refused client should try again: a turn usually takes seconds. */
const RETRY_AFTER_S = 5;

/**
 * The running-session cap of an org, checked where an interactive user
 * message would start a session running. The count is the sessions read
 * model (shared by every process), so it holds across web processes; two
 * requests racing at the cap may both pass, which overshoots by at most the
 * number of web processes. Batch sessions are never refused: they count
 * toward the cap (they are running from the moment they are written) and
 * wait their turn in the shard queues behind interactive work.
 */
export class RunningSessionGate {
  constructor(
    private readonly sessions: SessionStore,
    private readonly limits: OrgLimitsLookup,
    private readonly metrics: Metrics,
  ) {}

  async admit(orgId: string, session: { status: string } | null): Promise<void> {
    // A message to a session already running queues inside it and adds nothing.
    if (session?.status === 'running') return;
    const cap = (await this.limits.of(orgId)).running_sessions;
    if (cap <= 0) return;
    if ((await this.sessions.countRunning(orgId, cap)) < cap) return;
    this.metrics.rateLimitRefusals.inc({ surface: 'sessions', scope: 'running' });
    throw new RateLimitError(`This organization has ${cap} sessions running, its limit; retry when one finishes, or send the work as a session batch, which queues instead.`, 'concurrency_limited', {
      'Retry-After': String(RETRY_AFTER_S),
      'RateLimit-Limit': String(cap),
      'RateLimit-Remaining': '0',
      'RateLimit-Reset': String(RETRY_AFTER_S),
    });
  }
}
