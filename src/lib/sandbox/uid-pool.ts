/**
 * Host uids for sandboxed calls when Troupe runs as root: one per running
 * call, so RLIMIT_NPROC (which the kernel counts per host uid, across user
 * namespaces) bounds each call's processes alone: a fork bomb exhausts its
 * own budget, not its neighbours'. The range is unused by any account.
 * Several Troupe processes on one host start at different random points;
 * should two ever pick the same uid at once, those two calls share a process
 * budget and nothing else (each has its own PID, mount and user namespace).
 */
import { randomInt } from 'node:crypto';

export const CALL_UID_BASE = 200_000;
/** The last uid of the range is the start-up probe's; calls never take it. */
export const CALL_UID_SPAN = 60_000;

export class UidPool {
  private readonly inUse = new Set<number>();
  private next = randomInt(CALL_UID_SPAN);

  constructor(
    private readonly base = CALL_UID_BASE,
    private readonly span = CALL_UID_SPAN - 1,
  ) {}

  take(): number {
    for (let i = 0; i < this.span; i++) {
      const uid = this.base + ((this.next + i) % this.span);
      if (!this.inUse.has(uid)) {
        this.inUse.add(uid);
        this.next = (this.next + i + 1) % this.span;
        return uid;
      }
    }
    throw new Error('no free sandbox uid');
  }

  give(uid: number): void {
    this.inUse.delete(uid);
  }
}

export const callUids = new UidPool();
