/**
 * A settled host between timed calls. The interleaved run calls each path in
 * turn at concurrency 1, so whatever a proxy still does after its answer has
 * reached the client (logging, callbacks, cost tracking, GC) runs while the
 * next path's call is timed, on the same 2 cores. These helpers read the
 * stack's processes from /proc: which of their threads are on a core, and how
 * much CPU each process has used, so the run can (a) measure how much of a
 * proxy's work spills into the next call and (b) wait, bounded, until every
 * process of the stack is idle before the next timed call starts.
 */
import { closeSync, openSync, readdirSync, readSync } from 'node:fs';
import { threadCpu } from '../support/thread-cpu.js';

export interface CpuSample {
  /** Some thread of some process was running or runnable ('R') when read. */
  busy: boolean;
  /** CPU time of each process so far, in µs (all threads, from schedstat). */
  cpu: number[];
}

/**
 * Each thread's stat and schedstat, kept open and re-read from offset 0 (a /proc file is generated anew on every
 * read from its start). Opening, reading and closing each file per sample took about 19 µs a file here, against
 * 2.5 µs for a re-read: with some 60 threads in the stack a sample cost 2 ms, and settling, which samples every
 * 1 ms poll, took 4.4 ms per call and most of the run's wall time.
 */
const open = new Map<string, { stat: number; sched: number }>();
const buf = Buffer.alloc(1024);

function reread(fd: number): string {
  return buf.toString('latin1', 0, readSync(fd, buf, 0, buf.length, 0));
}

function fdsOf(pid: number, tid: string): { stat: number; sched: number } {
  const key = `${pid}/${tid}`;
  let fds = open.get(key);
  if (!fds) {
    const stat = openSync(`/proc/${pid}/task/${tid}/stat`, 'r');
    let sched: number;
    try {
      sched = openSync(`/proc/${pid}/task/${tid}/schedstat`, 'r');
    } catch (e) {
      closeSync(stat);
      throw e;
    }
    open.set(key, (fds = { stat, sched }));
  }
  return fds;
}

function forget(pid: number, tid: string): void {
  const key = `${pid}/${tid}`;
  const fds = open.get(key);
  if (!fds) return;
  open.delete(key);
  closeSync(fds.stat);
  closeSync(fds.sched);
}

/** Reads each process's threads once. A process that has gone reads as idle with 0 µs. */
export function sampleCpu(pids: number[]): CpuSample {
  let busy = false;
  const cpu = pids.map((pid) => {
    let ns = 0;
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      return 0;
    }
    for (const tid of tids) {
      try {
        const fds = fdsOf(pid, tid);
        const stat = reread(fds.stat);
        // "tid (comm) S ...": the name may hold spaces and parentheses, the state follows the last ')'.
        if (stat.charCodeAt(stat.lastIndexOf(')') + 2) === 82 /* R */) busy = true;
        ns += Number(reread(fds.sched).split(' ')[0]);
      } catch {
        forget(pid, tid); // the thread ended between the listing and the read
      }
    }
    return ns / 1000;
  });
  return { busy, cpu };
}

const tick = () => new Promise<void>((resolve) => setTimeout(resolve, 1));

/**
 * Waits until no thread of `pids` is on a core and none of them has used any
 * CPU over one 1 ms poll, or until `boundMs` has passed (a process with a
 * timer of its own must not stall the run). Returns the time waited and
 * whether the host settled. Every path of the run is waited for alike.
 */
export async function settle(pids: number[], boundMs: number): Promise<{ ms: number; settled: boolean }> {
  const t0 = performance.now();
  let prev = sampleCpu(pids);
  for (;;) {
    await tick();
    const s = sampleCpu(pids);
    const quiet = !s.busy && s.cpu.every((c, i) => c === prev.cpu[i]);
    const ms = performance.now() - t0;
    if (quiet || ms >= boundMs) return { ms, settled: quiet };
    prev = s;
  }
}

/** An idle process's CPU over `ms`, per second, by thread name: which thread wakes it when nothing happens. */
export async function idleByThread(pid: number, ms: number): Promise<string> {
  const before = threadCpu(pid);
  await new Promise((r) => setTimeout(r, ms));
  const after = threadCpu(pid);
  const rows = [...after].map(([name, us]) => [name, ((us - (before.get(name) ?? 0)) * 1000) / ms / 1000] as const).filter(([, v]) => v > 0);
  const total = rows.reduce((a, [, v]) => a + v, 0);
  return `${total.toFixed(2)} ms/s (${rows.sort((a, b) => b[1] - a[1]).map(([n, v]) => `${n} ${v.toFixed(2)}`).join(', ')})`;
}

/**
 * A process's CPU so far in µs: its main thread's, and its other threads' (V8's platform workers, which run parallel
 * scavenges and concurrent marking, and libuv's pool). Node 20 does not name its threads, so they are told apart
 * only by the main thread's id being the process's. Read through the kept-open descriptors, cheap enough to read
 * around every call (--tail).
 */
export function mainAndHelpers(pid: number): { main: number; helpers: number } {
  const out = { main: 0, helpers: 0 };
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const us = Number(reread(fdsOf(pid, tid).sched).split(' ')[0]) / 1000;
      if (tid === String(pid)) out.main += us;
      else out.helpers += us;
    } catch {
      forget(pid, tid);
    }
  }
  return out;
}
