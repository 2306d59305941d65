import { readFileSync } from 'node:fs';

/** One process as Linux's /proc/<pid>/stat describes it: the fields the launcher and the tests read. */
export interface ProcStat {
  pid: number;
  comm: string;
  state: string;
  ppid: number;
  pgrp: number;
  /** Start time in clock ticks since boot: with the pid, it tells a process from a later one given the same pid. */
  start: string;
}

/** Reads /proc/<pid>/stat; null when there is no such process (or no /proc). */
export function procStat(pid: number): ProcStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // "pid (comm) state ppid pgrp ... starttime(22nd) ...": comm may hold spaces and parentheses, so split after its last ')'.
  const close = text.lastIndexOf(')');
  const rest = text.slice(close + 2).split(' ');
  return { pid, comm: text.slice(text.indexOf('(') + 1, close), state: rest[0], ppid: Number(rest[1]), pgrp: Number(rest[2]), start: rest[19] };
}
