import { RateLimitError } from '../domain/errors.js';
import { ExpiringCache } from '../domain/expiring-cache.js';
import type { Metrics } from '../metrics/metrics.js';
import type { SessionStore } from '../store/sessions.js';
import type { OrgLimitsLookup } from './org-limits.js';

/** How soon a refused client should try again: a turn usually takes seconds. */
const RETRY_AFTER_S = 5;

/** How long this process trusts a count of an org's running sessions. */
const COUNT_TTL_MS = 1000;
const MAX_CACHED = 10_000;
/**
 * While the last count plus the sessions this process has started since stay
 * below this share of the cap, a message is admitted without counting again.
 * A quarter keeps the cap with up to four web processes: each admits uncounted
 * at most a quarter of the cap (less what was running) per count.
 */
const UNCOUNTED_SHARE = 0.25;

interface Known {
  running: number;
  /** Sessions this process let start since `running` was counted. */
  admitted: number;
}

/**
 * The running-session cap of an org, checked where an interactive user
 * message would start a session running. The count is the sessions read
 * model (shared by every process), so it holds across web processes; two
 * requests racing at the cap may both pass, which overshoots by at most the
 * number of web processes. Batch sessions are never refused: they count
 * toward the cap (they are running from the moment they are written) and
 * wait their turn in the shard queues behind interactive work.
 *
 * Counting is a query per message (a collection scan on mongo-java-server),
 * so far below the cap a count is reused for COUNT_TTL_MS (see UNCOUNTED_SHARE);
 * near the cap every message is counted as before.
 */
export class RunningSessionGate {
  private readonly known = new ExpiringCache<Known>(COUNT_TTL_MS, MAX_CACHED);

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
    const known = this.known.get(orgId);
    if (known && known.running + known.admitted < cap * UNCOUNTED_SHARE) {
      known.admitted++;
      return;
    }
    const running = await this.sessions.countRunning(orgId, cap);
    if (running < cap) {
      this.known.set(orgId, { running, admitted: 1 });
      return;
    }
    this.metrics.rateLimitRefusals.inc({ surface: 'sessions', scope: 'running' });
    throw new RateLimitError(`This organization has ${cap} sessions running, its limit; retry when one finishes, or send the work as a session batch, which queues instead.`, 'concurrency_limited', {
      'Retry-After': String(RETRY_AFTER_S),
      'RateLimit-Limit': String(cap),
      'RateLimit-Remaining': '0',
      'RateLimit-Reset': String(RETRY_AFTER_S),
    });
  }

  /** Sessions were started outside `admit` (a batch): the next message counts again. */
  forget(orgId: string): void {
    this.known.delete(orgId);
  }
}
