/** What one sweep's log line says about the sessions it resumed. */
export interface ResumeLine {
  /** Sessions resumed by this sweep. */
  sessions: number;
  /** Of them, the ones not yet reported in this episode. */
  new: number;
  sample: string[];
  /** Sweeps since the last line that resumed only sessions already reported. */
  repeated_sweeps: number;
}

/** A session is reported again once it went this long without being resumed: its episode is over. */
export const EPISODE_QUIET_MS = 60_000;
/** While an episode's sessions keep being resumed, and nothing new, one reminder per this long. */
export const REMINDER_MS = 60_000;
/** Bounds the memory of an episode; past it, the episode starts over (and says so once more). */
const MAX_REMEMBERED = 10_000;

/**
 * When the sweeper says it resumed sessions. While Redis is partitioned from
 * the worker holding a session's hand-off, every sweep (each second) finds the
 * same sessions stranded and resumes them again (no-ops, by their job ids):
 * one line per sweep said nothing new. A session is reported once per episode
 * (until it goes EPISODE_QUIET_MS without a resume); sweeps that resume only
 * reported sessions are counted, and said once per REMINDER_MS.
 */
export class ResumeLog {
  /** Session → when a sweep last resumed it. */
  private readonly seen = new Map<string, number>();
  private repeats = 0;
  private lastLineAt = -Infinity;

  /** The line to log for one sweep's resumed sessions, or null when it would only repeat the last. A restarted Redis starts a new episode. */
  note(resumed: readonly string[], now: number, redisRestarted = false): ResumeLine | null {
    if (redisRestarted || this.seen.size > MAX_REMEMBERED) this.seen.clear();
    for (const [id, at] of this.seen) if (now - at >= EPISODE_QUIET_MS) this.seen.delete(id);
    if (resumed.length === 0) return null;
    const fresh = resumed.filter((id) => !this.seen.has(id));
    for (const id of resumed) this.seen.set(id, now);
    if (fresh.length === 0 && now - this.lastLineAt < REMINDER_MS) {
      this.repeats++;
      return null;
    }
    const line = { sessions: resumed.length, new: fresh.length, sample: (fresh.length ? fresh : resumed).slice(0, 5), repeated_sweeps: this.repeats };
    this.repeats = 0;
    this.lastLineAt = now;
    return line;
  }
}
