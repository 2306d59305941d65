/**
 * What crosses the wire per call, counted from the kernel's side: the system
 * calls a process makes while a batch of calls goes through it (`strace -f -c`
 * attached to it). On one host every write to a socket is a segment the other
 * end wakes up for, and every read or epoll turn is a wake-up of this one, so
 * the counts per call compare a proxy's traffic with the bare proxy's and the
 * direct call's where latency figures are too noisy to. The upstream's counts
 * during a proxy's calls show what the proxy sends it (one read per segment).
 * Needs `strace` and ptrace rights over the stack's processes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Syscall name -> calls, over a traced batch. */
export type Census = Record<string, number>;

/** The calls `strace -c` reported, by name, from its summary table. */
function parseSummary(text: string): Census {
  const out: Census = {};
  for (const line of text.split('\n')) {
    const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?([a-z_0-9]+)\s*$/.exec(line);
    if (m && m[2] !== 'total') out[m[2]] = Number(m[1]);
  }
  return out;
}

/** Starts strace on a process and resolves once it has attached (its first "attached" line). */
async function attach(pid: number, file: string, extra: string[]): Promise<ChildProcess> {
  const st = spawn('strace', ['-f', ...extra, '-o', file, '-p', String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`strace did not attach to ${pid}`)), 10_000);
    st.once('error', reject);
    st.stderr!.on('data', (d: Buffer) => {
      if (/attached/.test(String(d))) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  // -f attaches the process's other threads one by one after the first line.
  await new Promise((r) => setTimeout(r, 300));
  return st;
}

async function detach(st: ChildProcess): Promise<void> {
  const gone = new Promise((r) => st.once('exit', r));
  st.kill('SIGINT');
  await gone;
}

/** Runs `batch` with strace counting the syscalls of each named process; returns each one's census. */
export async function countSyscalls(pids: Record<string, number>, dir: string, batch: () => Promise<void>): Promise<Record<string, Census>> {
  const names = Object.keys(pids);
  const tracers = await Promise.all(names.map((n) => attach(pids[n], `${dir}/${n}.count`, ['-c'])));
  await batch();
  await Promise.all(tracers.map(detach));
  return Object.fromEntries(names.map((n) => [n, parseSummary(readFileSync(`${dir}/${n}.count`, 'utf8'))]));
}

/** Runs `batch` with the socket syscalls of one process written out in full (with timestamps) to `file`. */
export async function traceSockets(pid: number, file: string, batch: () => Promise<void>): Promise<void> {
  const st = await attach(pid, file, ['-tt', '-e', 'trace=write,writev,sendto,sendmsg,read,readv,recvfrom,recvmsg,epoll_wait,epoll_pwait,epoll_pwait2,setsockopt', '-s', '64']);
  await batch();
  await detach(st);
}

/** The syscalls that move bytes or wait for them, per call, as a table row. */
const SHOWN = ['write', 'writev', 'sendto', 'sendmsg', 'read', 'readv', 'recvfrom', 'recvmsg', 'epoll_wait', 'epoll_pwait', 'futex'];

export function censusRow(label: string, c: Census, calls: number): string {
  const per = (k: string) => ((c[k] ?? 0) / calls).toFixed(2);
  const total = Object.values(c).reduce((a, b) => a + b, 0);
  const present = SHOWN.filter((k) => c[k]);
  const rest = Object.entries(c).filter(([k]) => !SHOWN.includes(k)).sort((a, b) => b[1] - a[1]).slice(0, 4).map(([k, v]) => `${k} ${(v / calls).toFixed(2)}`);
  return `| ${label} | ${(total / calls).toFixed(2)} | ${present.map((k) => `${k} ${per(k)}`).join(', ')} | ${rest.join(', ')} |`;
}
