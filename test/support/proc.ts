import { readdirSync, readFileSync } from 'node:fs';

/** One process as Linux's /proc/<pid>/stat describes it. */
export interface ProcInfo {
  pid: number;
  comm: string;
  state: string;
  ppid: number;
  pgrp: number;
}

function stat(pid: number): ProcInfo | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so split after its last ')'.
  const close = text.lastIndexOf(')');
  const [state, ppid, pgrp] = text.slice(close + 2).split(' ');
  return { pid, comm: text.slice(text.indexOf('(') + 1, close), state, ppid: Number(ppid), pgrp: Number(pgrp) };
}

/** The direct children of `pid` that are running now. */
export function childrenOf(pid: number): ProcInfo[] {
  const out: ProcInfo[] = [];
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
