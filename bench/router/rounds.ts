/**
 * The interleaved rounds: every path of a case called in turn at concurrency
 * 1, the order rotating each round, each timed call on a settled host
 * (settle.ts); then what each proxy adds over calling the fake upstream
 * directly, its CPU per call, and how much of its work spilled into the next
 * path's call.
 */
import { fmt, summary } from '../support/percentiles.js';
import { runSeconds } from '../support/stack.js';
import { PEER_NAME, type Peers } from './paths.js';
import { mainAndHelpers, sampleCpu, settle } from './settle.js';
import { gcCounts, reportTail, type TailSample } from './tail.js';

/** Untimed rounds before each case (JIT, pools, caches): 200 until the lean floor joined, which would have taken the default run past 6 minutes. */
export const WARM_UP = 100;

export interface Rounds {
  /** Timed rounds per case. */
  n: number;
  /** Bound on waiting for an idle host before each timed call; 0 = off. */
  settleMs: number;
  /** How often each path joins a round (every k-th; 1 when not named). */
  every: Record<string, number>;
  /** --tail: the router's CPU around each of its calls, main thread and the rest (tail.ts). */
  tail: boolean;
  /** The router's origin, for its /metrics (GC counts per case with --tail). */
  routerOrigin: string;
  /** The router processes whose CPU per call is reported, by path name. */
  cpuPids: Partial<Record<keyof Peers, number>>;
  /** The process behind each path (the fake upstream for `direct`): what settling waits for, and whose spill is measured. */
  pathPids: Partial<Record<keyof Peers, number>>;
}

function row(label: string, direct: number[], other: number[]): { p50: number; p99: number; line: string } {
  const d = summary(direct);
  const o = summary(other);
  const added = { p50: o.p50 - d.p50, p99: o.p99 - d.p99 };
  return { ...added, line: `| ${label} | ${fmt(d.p50)} / ${fmt(d.p99)} | ${fmt(o.p50)} / ${fmt(o.p99)} | ${added.p50.toFixed(2)} ms / ${added.p99.toFixed(2)} ms |` };
}

/** Calls each path in turn, rotating the order every round, and reports what each proxy adds over `direct`. */
export async function interleaved(cfg: Rounds, label: string, paths: Peers, useFirst: boolean): Promise<void> {
  const { n: N, settleMs: SETTLE_MS, every: EVERY, tail: TAIL, routerOrigin, cpuPids, pathPids } = cfg;
  const names = Object.keys(paths).filter((k) => paths[k as keyof Peers]) as (keyof Peers)[];
  // The slow peers and the lean floor join every k-th round (EVERY), spread evenly over the run.
  const inRound = (i: number) => names.map((_, j) => j).filter((j) => i % (EVERY[names[j]] ?? 1) === 0);
  for (let i = 0; i < WARM_UP; i++) for (const j of inRound(i)) await paths[names[j]]!(); // warm-up: JIT, pools, caches
  const seen: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const cpu = (): Record<string, number> => Object.fromEntries(Object.entries(cpuPids).map(([n, pid]) => [n, runSeconds(pid!) ?? NaN]));
  const pids = names.map((n) => pathPids[n]!);
  // spill[p]: CPU that path p's process used during the next (other) path's timed call; waits[p]: settling after p.
  const spill: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const waits: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  let unsettled = 0;
  let prev = -1;
  const tail: TailSample[] = [];
  const gcBefore = TAIL ? await gcCounts(routerOrigin) : null;
  const cpuBefore = cpu();
  for (let i = 0; i < N; i++) {
    const round = inRound(i);
    for (let k = 0; k < round.length; k++) {
      const j = round[(i + k) % round.length];
      const n = names[j];
      if (SETTLE_MS > 0) {
        const w = await settle(pids, SETTLE_MS);
        if (prev >= 0) waits[names[prev]].push(w.ms);
        if (!w.settled) unsettled++;
      }
      const split = TAIL && n === 'router' ? mainAndHelpers(pathPids.router!) : null;
      const before = sampleCpu(pids).cpu;
      const [total, first] = await paths[n]!();
      const after = sampleCpu(pids).cpu;
      if (split) {
        const s1 = mainAndHelpers(pathPids.router!);
        tail.push({ ms: useFirst ? first : total, main: s1.main - split.main, helpers: s1.helpers - split.helpers });
      }
      if (prev >= 0 && prev !== j) spill[names[prev]].push(after[prev] - before[prev]);
      seen[n].push(useFirst ? first : total);
      prev = j;
    }
  }
  const cpuAfter = cpu();
  const perCall = (n: string) => `${(((cpuAfter[n] - cpuBefore[n]) * 1e6) / seen[n].length).toFixed(0)} µs`;
  const r = row(`${label}, router`, seen.direct, seen.router);
  console.log(r.line + ` CPU ${perCall('router')}/call |`);
  for (const other of ['baseline', 'traced', 'traced10', 'floor', 'lean', 'leanNet', 'relay', 'go'] as const) {
    if (!seen[other]) continue;
    const b = row(`${label}, ${PEER_NAME[other]}`, seen.direct, seen[other]);
    console.log(b.line + ` CPU ${perCall(other)}/call |`);
  }
  for (const peer of ['litellm', 'portkey'] as const) {
    if (!seen[peer]) continue;
    const l = row(`${label}, ${PEER_NAME[peer]}`, seen.direct, seen[peer]);
    console.log(l.line + ` ratio p50 ${(l.p50 / r.p50).toFixed(1)}×, p99 ${(l.p99 / r.p99).toFixed(1)}× |`);
  }
  reportSpill(names, spill, waits, unsettled, SETTLE_MS);
  if (gcBefore) console.log(reportTail(tail, gcBefore, await gcCounts(routerOrigin), N));
}

/**
 * Each proxy's work that fell into the next path's timed call (its process's CPU during that call, which does not
 * involve it), and with settling on, how long the host took to go idle after it. The fake upstream (`direct`) serves
 * every path, so its share says nothing about leftovers and is not shown.
 */
function reportSpill(names: string[], spill: Record<string, number[]>, waits: Record<string, number[]>, unsettled: number, settleMs: number): void {
  const parts = names.filter((n) => n !== 'direct').map((n) => {
    const s = spill[n];
    const mean = s.reduce((a, b) => a + b, 0) / Math.max(1, s.length);
    const over = s.filter((x) => x > 50).length / Math.max(1, s.length);
    const w = waits[n].length ? `, then idle after ${summary(waits[n]).p50.toFixed(1)} / ${summary(waits[n]).p99.toFixed(1)} ms (p50 / p99)` : '';
    return `${PEER_NAME[n] ?? n} ${mean.toFixed(0)} µs (${(100 * over).toFixed(0)}% of calls > 50 µs)${w}`;
  });
  console.log(`|   spill into the next call (mean CPU of the previous proxy during it): ${parts.join('; ')}${settleMs > 0 ? `; not idle within ${settleMs} ms before ${unsettled} calls` : ''} |`);
}
