/**
 * Where a process's CPU goes, counted from outside it (issue 11, worker scale-out): per process and thread CPU,
 * kernel counters (read/write syscalls, context switches) from /proc, and Redis's own per-command counts
 * (INFO commandstats), each as a delta over a window. Used by `bench/ledger/run.ts --census`: once over an idle
 * window (the stack up, nothing sent: the fixed cost per second) and once over the measured window (per event).
 * Cheap to read (a few /proc files and one INFO per reading), so it does not disturb what it measures.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { threadCpu } from '../support/thread-cpu.js';

/** One process's counters so far: CPU by thread name (µs), syscalls and context switches (all threads). */
export interface ProcCounters {
  cpuUs: Map<string, number>;
  syscr: number;
  syscw: number;
  voluntary: number;
  involuntary: number;
}

function read(path: string): string {
  try {
    return readFileSync(path, 'latin1');
  } catch {
    return '';
  }
}

/** Thread names with a number in them (`node-worker-3`, `C2 CompilerThre`) are summed under one name without it. */
const threadName = (comm: string) => comm.replace(/[\d]+/g, '#');

export function procCounters(pid: number): ProcCounters {
  const cpuUs = new Map<string, number>();
  for (const [name, us] of threadCpu(pid)) cpuUs.set(threadName(name), (cpuUs.get(threadName(name)) ?? 0) + us);
  let voluntary = 0;
  let involuntary = 0;
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    // gone
  }
  for (const tid of tids) {
    const status = read(`/proc/${pid}/task/${tid}/status`);
    voluntary += Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0);
    involuntary += Number(/nonvoluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0);
  }
  const io = read(`/proc/${pid}/io`);
  return { cpuUs, syscr: Number(/syscr:\s+(\d+)/.exec(io)?.[1] ?? 0), syscw: Number(/syscw:\s+(\d+)/.exec(io)?.[1] ?? 0), voluntary, involuntary };
}

/** Redis command name -> calls so far (INFO commandstats). */
export async function redisCommandStats(redis: Redis): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const m of (await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out.set(m[1], Number(m[2]));
  return out;
}

export interface Reading {
  procs: Record<string, ProcCounters>;
  redis: Map<string, number>;
}

export async function reading(pids: Record<string, number>, redis: Redis): Promise<Reading> {
  const procs: Record<string, ProcCounters> = {};
  for (const [name, pid] of Object.entries(pids)) procs[name] = procCounters(pid);
  return { procs, redis: await redisCommandStats(redis) };
}

const fix = (v: number, d = 2) => v.toFixed(d);

/**
 * What changed between two readings, divided by `per` (seconds for an idle window, events for a measured one),
 * with CPU in ms per unit: one line per process, then Redis's commands.
 */
export function censusReport(a: Reading, b: Reading, per: number, unit: string): string {
  const lines: string[] = [];
  for (const [name, end] of Object.entries(b.procs)) {
    const start = a.procs[name];
    if (!start) continue;
    const threads = [...end.cpuUs].map(([t, us]) => [t, (us - (start.cpuUs.get(t) ?? 0)) / 1000 / per] as const).filter(([, ms]) => ms > 0.0005).sort((x, y) => y[1] - x[1]);
    const total = threads.reduce((s, [, ms]) => s + ms, 0);
    lines.push(
      `  ${name}: CPU ${fix(total, 3)} ms/${unit} (${threads.slice(0, 6).map(([t, ms]) => `${t} ${fix(ms, 3)}`).join(', ')}); ` +
        `syscalls read ${fix((end.syscr - start.syscr) / per)} write ${fix((end.syscw - start.syscw) / per)}, ` +
        `context switches voluntary ${fix((end.voluntary - start.voluntary) / per)} involuntary ${fix((end.involuntary - start.involuntary) / per)} per ${unit}`,
    );
  }
  const cmds = [...b.redis].map(([k, v]) => [k, (v - (a.redis.get(k) ?? 0)) / per] as const).filter(([k, v]) => v > 0 && k !== 'info').sort((x, y) => y[1] - x[1]);
  const sum = cmds.reduce((s, [, v]) => s + v, 0);
  lines.push(`  Redis commands (server side, scripts' inner calls included): ${fix(sum)} per ${unit}: ${cmds.slice(0, 24).map(([k, v]) => `${k} ${fix(v)}`).join(', ')}`);
  return lines.join('\n');
}

/**
 * `BENCH_PERF_DIR`: records the named processes with `perf record -e cpu-clock -g` over a window, one file each
 * (run with `NODE_OPTIONS=--perf-basic-prof` for JavaScript frames). Returns the stop function.
 */
export async function perfRecord(pids: Record<string, number>, dir: string | undefined): Promise<() => Promise<void>> {
  if (!dir) return async () => undefined;
  const { spawn } = await import('node:child_process');
  const procs = Object.entries(pids).map(([name, pid]) => spawn('perf', ['record', '-q', '-e', 'cpu-clock', '-F', '999', '-g', '-p', String(pid), '-o', `${dir}/${name}.data`], { stdio: 'ignore' }));
  await new Promise((r) => setTimeout(r, 200));
  return async () => {
    await Promise.all(procs.map((p) => new Promise((r) => { p.once('exit', r); p.kill('SIGINT'); })));
  };
}
