import type { MongoClient, ServerHeartbeatStartedEvent } from 'mongodb';

/** A server's monitor: a heartbeat in flight, or the time the last one ended. */
type MonitorState = { startedAt: number; awaited: boolean } | { startedAt: null; endedAt: number };

/**
 * Why a client needs watching (docs/reliability.md, issue 16): the driver (7.x)
 * writes a command to a socket the server has just closed, when the socket is
 * already destroyed but its 'close' has not run yet, and then waits for a
 * 'drain' that never comes. When that command is its server monitor's hello,
 * the monitor stays "monitoring" for good: no heartbeat ends, the server stays
 * Unknown after the next network error, its pool stays paused, and every
 * operation fails server selection until the process restarts.
 *
 * A monitor that makes progress ends each heartbeat, failed or not, within its
 * socket timeout; one that does not is wedged. The tracker below tells which,
 * from the driver's public heartbeat events; the watchdog then asks a fresh
 * connection whether the server answers, and if it does, has the client replaced.
 */
export class HeartbeatTracker {
  private readonly servers = new Map<string, MonitorState>();

  constructor(private readonly opts: { connectTimeoutMS: number; heartbeatFrequencyMS: number }) {}

  started(address: string, awaited: boolean, at: number): void {
    this.servers.set(address, { startedAt: at, awaited });
  }

  ended(address: string, at: number): void {
    this.servers.set(address, { startedAt: null, endedAt: at });
  }

  /** The first server whose monitor is past any legitimate bound, and how; null when all make progress. */
  stalled(now: number): { address: string; reason: string; startedAt: number | null } | null {
    const slack = 1000;
    for (const [address, s] of this.servers) {
      if (s.startedAt !== null) {
        // A polled hello times out after connectTimeoutMS; an awaited one may first wait heartbeatFrequencyMS.
        const bound = this.opts.connectTimeoutMS + (s.awaited ? this.opts.heartbeatFrequencyMS : 0) + slack;
        if (now - s.startedAt > bound) return { address, reason: `heartbeat in flight for ${now - s.startedAt} ms`, startedAt: s.startedAt };
      } else if (now - s.endedAt > this.opts.heartbeatFrequencyMS + this.opts.connectTimeoutMS + slack) {
        return { address, reason: `no heartbeat for ${now - s.endedAt} ms`, startedAt: null };
      }
    }
    return null;
  }
}

export interface WatchdogOptions {
  connectTimeoutMS: number;
  heartbeatFrequencyMS: number;
  checkEveryMs?: number;
  /** Whether a fresh connection to the same server answers now. */
  probe(): Promise<boolean>;
  /** Replaces the client; the watchdog then watches the new one (attach). */
  replace(reason: string): Promise<void>;
}

/** Watches one client at a time; `attach` moves it to the replacement. */
export class MongoWatchdog {
  /** The attached client's; none before the first attach. */
  private tracker: HeartbeatTracker | null = null;
  private detachFromClient: (() => void) | null = null;
  private readonly timer: NodeJS.Timeout;
  private busy = false;
  private lastTick = Date.now();
  private readonly checkEveryMs: number;

  constructor(private readonly opts: WatchdogOptions) {
    this.checkEveryMs = opts.checkEveryMs ?? 1000;
    this.timer = setInterval(() => void this.tick(), this.checkEveryMs);
    this.timer.unref();
  }

  attach(client: MongoClient): void {
    this.detach();
    const tracker = (this.tracker = new HeartbeatTracker(this.opts));
    const started = (e: ServerHeartbeatStartedEvent) => tracker.started(e.connectionId, e.awaited, Date.now());
    const ended = (e: { connectionId: string }) => tracker.ended(e.connectionId, Date.now());
    client.on('serverHeartbeatStarted', started).on('serverHeartbeatSucceeded', ended).on('serverHeartbeatFailed', ended);
    this.detachFromClient = () => client.off('serverHeartbeatStarted', started).off('serverHeartbeatSucceeded', ended).off('serverHeartbeatFailed', ended);
  }

  stop(): void {
    clearInterval(this.timer);
    this.detach();
  }

  private detach(): void {
    this.detachFromClient?.();
    this.detachFromClient = null;
  }

  private async tick(): Promise<void> {
    const now = Date.now();
    // A late tick means a blocked event loop: a heartbeat's reply may be waiting behind it, so it proves nothing.
    const late = now - this.lastTick > this.checkEveryMs + 1000;
    this.lastTick = now;
    const tracker = this.tracker;
    if (late || this.busy || !tracker) return;
    const stall = tracker.stalled(now);
    if (!stall) return;
    this.busy = true;
    try {
      if (!(await this.opts.probe())) return;
      // Still the same stall after the probe's round trip (a slow heartbeat would have ended by now)?
      const again = tracker === this.tracker ? tracker.stalled(Date.now()) : null;
      if (!again || again.startedAt !== stall.startedAt) return;
      await this.opts.replace(`the monitor of ${again.address} is wedged (${again.reason}) while a fresh connection answers`);
    } finally {
      this.busy = false;
    }
  }
}
