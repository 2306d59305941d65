/**
 * The syscall census (--syscalls N): instead of timing, each proxy's and the
 * upstream's syscalls are counted over N calls per path with strace
 * (syscalls.ts), next to the proxy's CPU per call untraced.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PEER_NAME, type Peers } from './paths.js';
import { profileClock } from './profile.js';
import { idleByThread, sampleCpu } from './settle.js';
import { censusRow, countSyscalls, traceSockets } from './syscalls.js';

/**
 * The syscall census: for each case and each path, N calls with strace counting the proxy's syscalls and the
 * upstream's, per call. The direct path's upstream row is the floor every proxy's upstream row is compared with.
 * Then two calls per case through the router and the bare proxy with their socket syscalls written out in full.
 * `profileWindow` is set to the router's idle period at the end (what --profile summarises).
 */
export async function census(cases: [string, Peers][], upstreamPid: number, calls: number, pathPids: Partial<Record<keyof Peers, number>>, profileWindow: [number, number]): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'router-strace-'));
  console.log(`syscalls per call, ${calls} calls per path, concurrency 1 (strace -f -c; full traces in ${dir})\n`);
  console.log('| case, path, process | all | bytes and waits | others (top 4) |\n|---|---|---|---|');
  const idle = await countSyscalls({ router: pathPids.router! }, dir, () => new Promise((r) => setTimeout(r, 2000)));
  console.log(censusRow('idle, router, per second', idle.router, 2));
  await traceSockets(pathPids.router!, `${dir}/idle-router.trace`, () => new Promise((r) => setTimeout(r, 2000)));
  for (const [label, paths] of cases) {
    for (const n of Object.keys(paths) as (keyof Peers)[]) {
      const path = paths[n];
      if (!path || n === 'litellm' || n === 'portkey') continue;
      for (let i = 0; i < 50; i++) await path();
      const pids: Record<string, number> = { upstream: upstreamPid, ...(n === 'direct' ? {} : { proxy: pathPids[n]! }) };
      const counts = await countSyscalls(pids, dir, async () => {
        for (let i = 0; i < calls; i++) await path();
      });
      // The same number of calls untraced, back to back: the proxy's CPU per call (strace's own cost left out).
      const cpuPid = pathPids[n === 'direct' ? 'direct' : n]!;
      const before = sampleCpu([cpuPid]).cpu[0];
      for (let i = 0; i < calls; i++) await path();
      const cpuUs = (sampleCpu([cpuPid]).cpu[0] - before) / calls;
      if (counts.proxy) console.log(censusRow(`${label}, ${PEER_NAME[n] ?? n} (CPU ${cpuUs.toFixed(0)} µs/call untraced)`, counts.proxy, calls));
      else console.log(`| ${label}, direct: the upstream's CPU untraced | ${cpuUs.toFixed(0)} µs/call | | |`);
      console.log(censusRow(`${label}, ${PEER_NAME[n] ?? n}: the upstream`, counts.upstream, calls));
      if (n === 'router' || n === 'floor') {
        await traceSockets(pathPids[n]!, `${dir}/${label.replace(/\W+/g, '-')}-${n}.trace`, async () => {
          for (let i = 0; i < 2; i++) await path();
        });
      }
    }
  }
  // Idle again once start-up is long past (the figure at the top is taken a few seconds after start).
  console.log('');
  for (const n of ['router', 'baseline', 'floor', 'lean', 'leanNet', 'relay', 'go'] as const) {
    if (!pathPids[n]) continue;
    // With --profile, the router's profile is summarised over its idle period: what wakes it when nothing happens.
    if (n === 'router') profileWindow[0] = profileClock();
    console.log(`${PEER_NAME[n]} CPU while idle after the calls, 5 s, by thread: ${await idleByThread(pathPids[n]!, 5000)}`);
    if (n === 'router') profileWindow[1] = profileClock();
  }
}
