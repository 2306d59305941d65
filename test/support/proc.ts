import { readdirSync, readFileSync } from 'node:fs';
import { procStat as stat, type ProcStat } from '../../infra/services/proc-stat.js';

/** The direct children of `pid` that are running now. */
export function childrenOf(pid: number): ProcStat[] {
  const out: ProcStat[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const p = stat(Number(name));
    if (p && p.ppid === pid && p.state !== 'Z') out.push(p);
  }
  return out;
}

/** Whether `pid` has ended: no such process, or one that has exited and waits to be reaped. */
export function ended(pid: number): boolean {
  const p = stat(pid);
  return p === null || p.state === 'Z';
}

/** `pid`'s process group. */
export function processGroup(pid: number): number | undefined {
  return stat(pid)?.pgrp;
}

/**
 * Pids of the processes whose command line contains `needle` (a sandboxed tool renames itself to be found). Not by
 * uid: other Troupe processes on this host run calls in the same uid range.
 */
export function processesWith(needle: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(needle)) pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}
