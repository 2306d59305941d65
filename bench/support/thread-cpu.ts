import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU time of each thread of a process so far, in µs, by thread name (threads of one name summed), from
 * /proc/<pid>/task/<tid>/comm and schedstat. A process that has ended reads as empty.
 */
export function threadCpu(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'latin1').trim();
      const us = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'latin1').split(' ')[0]) / 1000;
      out.set(name, (out.get(name) ?? 0) + us);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return out;
}
