import { RateLimitError } from '../../domain/errors.js';
import { ExpiringCache } from '../../domain/expiring-cache.js';
import type { Metrics } from '../metrics/metrics.js';
import type { SessionStore } from '../../store/sessions.js';
import type { OrgLimitsLookup } from './org-limits.js';

/** How soon a refused client should try again: a turn usually takes seconds. */
const RETRY_AFTER_S = 5;

/** How long this process trusts a count of an org's running sessions. */
const COUNT_TTL_MS = 1000;
/**
 * A count this old is redone in the background by the next admitted message,
 * so that under steady traffic the count is renewed before it expires and no
 * message waits for one (a count scans the org's sessions: 30-45 ms on
 * mongo-java-server with a few thousand of them, the POST's slowest hop).
 */
const RECOUNT_AFTER_MS = 500;
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
  counted_at: number;
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
 * so far below the cap a count is reused for COUNT_TTL_MS (see UNCOUNTED_SHARE)
 * and renewed in the background by the first message past RECOUNT_AFTER_MS;
 * near the cap every message is counted as before.
 */
export class RunningSessionGate {
  private readonly known = new ExpiringCache<Known>(COUNT_TTL_MS, MAX_CACHED);
  /** Orgs whose count is being renewed in the background. */
  private readonly recounting = new Set<string>();

  constructor(
    private readonly sessions: SessionStore,
    private readonly limits: OrgLimitsLookup,
    private readonly metrics: Metrics,
  ) {}

  async admit(orgId: string, session: { status: string } | null, now = Date.now()): Promise<void> {
    // A message to a session already running queues inside it and adds nothing.
    if (session?.status === 'running') return;
    const cap = await this.overCap(orgId, now);
    if (cap !== null) this.refuse(cap);
  }

  /**
   * A message to a session whose status the caller does not have at hand
   * (`current` reads it): admitted as one that may start the session, and
   * refused only if a fresh read shows that it is not running already.
   */
  async admitMessage(orgId: string, current: () => Promise<{ status: string }>, now = Date.now()): Promise<void> {
    const cap = await this.overCap(orgId, now);
    if (cap !== null && (await current()).status !== 'running') this.refuse(cap);
  }

  /** Null when one more running session fits under the org's cap (it is then counted as admitted), else the cap. */
  private async overCap(orgId: string, now: number): Promise<number | null> {
    const cap = (await this.limits.of(orgId)).running_sessions;
    if (cap <= 0) return null;
    const known = this.known.get(orgId, now);
    if (known && known.running + known.admitted < cap * UNCOUNTED_SHARE) {
      known.admitted++;
      if (now - known.counted_at >= RECOUNT_AFTER_MS) this.recount(orgId, cap, known, now);
      return null;
    }
    const running = await this.sessions.countRunning(orgId, cap);
    if (running >= cap) return cap;
    this.known.set(orgId, { running, admitted: 1, counted_at: now }, now);
    return null;
  }

  private refuse(cap: number): never {
    this.metrics.rateLimitRefusals.inc({ surface: 'sessions', scope: 'running' });
    throw new RateLimitError(`This organization has ${cap} sessions running, its limit; retry when one finishes, or send the work as a session batch, which queues instead.`, 'concurrency_limited', {
      'Retry-After': String(RETRY_AFTER_S),
      'RateLimit-Limit': String(cap),
      'RateLimit-Remaining': '0',
      'RateLimit-Reset': String(RETRY_AFTER_S),
      // Replaces the request rate's policy the limiter set before: one answer's fields describe one policy. No `w`:
      // a cap on sessions at once has no window (the draft's syntax takes other parameters as comments).
      'RateLimit-Policy': `${cap};comment="running sessions"`,
    });
  }

  /**
   * Renews `was` without making anyone wait. As with a count made inline, the
   * message that asked for it stays counted as admitted on top of it, and so
   * do those admitted while it runs (they may or may not be in it). A count that fails is dropped: the
   * old one then expires and the next message counts inline, as before.
   */
  private recount(orgId: string, cap: number, was: Known, counted_at: number): void {
    if (this.recounting.has(orgId)) return;
    this.recounting.add(orgId);
    const before = was.admitted - 1;
    this.sessions.countRunning(orgId, cap).then(
      (running) => {
        this.recounting.delete(orgId);
        // Forgotten (a batch started) or replaced meanwhile: that entry is the newer truth.
        if (this.known.get(orgId, counted_at) === was) this.known.set(orgId, { running, admitted: was.admitted - before, counted_at }, counted_at);
      },
      () => this.recounting.delete(orgId),
    );
  }

  /** Sessions were started outside `admit` (a batch): the next message counts again. */
  forget(orgId: string): void {
    this.known.delete(orgId);
  }
}
