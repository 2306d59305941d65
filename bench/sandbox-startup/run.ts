/**
 * Sandbox start-up per tool call (figures, not pass/fail): the wall time of
 * runInSandbox for a handler that returns at once, so it is all start-up
 * (spawn, namespaces, mounts, seccomp, Node's boot, the runner, the result),
 * for today's bwrap sandbox against the legacy wrappers it replaced
 * (`unshare --net`/`setpriv`/`prlimit` around Node's permission model, kept
 * as TROUPE_SANDBOX=legacy for this comparison) in the same run. The modes
 * alternate in blocks so drift on a shared host falls on both. Calls run one
 * at a time unless --concurrency says otherwise. `runsc` (gVisor, the
 * opt-in tier) is timed beside them. Prints p50 / p99 / max per mode and the ratio.
 */
import { chmodSync, chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { configureSandbox, sandboxCapabilities } from '../../src/lib/sandbox/capabilities.js';
import { runInSandbox } from '../../src/lib/sandbox/run.js';
import { SANDBOX_UID, type SandboxMode } from '../../src/lib/sandbox/types.js';
import { benchArgs } from '../support/args.js';
import { summary } from '../support/percentiles.js';

const USAGE = 'Usage: node dist/bench/sandbox-startup/run.js [--calls 200] [--block 10] [--concurrency 1] [--modes legacy,bwrap,runsc]';
const values = benchArgs(USAGE, { calls: { type: 'string', default: '200' }, block: { type: 'string', default: '10' }, concurrency: { type: 'string', default: '1' }, modes: { type: 'string', default: 'legacy,bwrap,runsc' } }, ['calls', 'block', 'concurrency']);
const CALLS = Number(values.calls);
const BLOCK = Math.max(1, Number(values.block));
const CONCURRENCY = Math.max(1, Number(values.concurrency));
const MODES = values.modes!.split(',') as SandboxMode[];

async function block(dir: string, scratch: string, n: number): Promise<number[]> {
  const times: number[] = [];
  let left = n;
  const lane = async () => {
    while (left-- > 0) {
      const t0 = performance.now();
      const r = await runInSandbox({ rootDir: dir, handlerPath: join(dir, 'tool.js'), args: {}, env: { K: 'v' }, timeoutMs: 10_000, memoryMb: 128, internetAccess: false, scratchDir: scratch });
      if (!r.ok) throw new Error(`call failed: ${JSON.stringify(r)}`);
      times.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  return times;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-bench-sbx-'));
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, 'tool.js'), 'exports.handler = async () => ({ ok: 1 });');
  // As VersionFiles makes it: a scratch folder of its own, the legacy sandbox user's when Troupe is root.
  const scratch = mkdtempSync(join(tmpdir(), 'troupe-bench-sbx-scratch-'));
  if (process.getuid?.() === 0) chownSync(scratch, SANDBOX_UID, SANDBOX_UID);
  const times = new Map<SandboxMode, number[]>(MODES.map((m) => [m, []]));
  const levels = new Map<SandboxMode, string>();
  try {
    for (const m of MODES) {
      configureSandbox({ mode: m, scratchMb: 64 });
      levels.set(m, sandboxCapabilities().level);
      await block(dir, scratch, 3); // warm-up: page cache, ldd, the probe
    }
    for (let done = 0; done < CALLS; done += BLOCK) {
      for (const m of MODES) {
        configureSandbox({ mode: m, scratchMb: 64 });
        sandboxCapabilities(); // the probe, outside the timed calls
        times.get(m)!.push(...(await block(dir, scratch, Math.min(BLOCK, CALLS - done))));
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(scratch, { recursive: true, force: true });
  }
  process.stdout.write(`sandbox start-up per call, ${CALLS} calls per mode, concurrency ${CONCURRENCY}, ${cpus().length} cores, load ${loadavg().map((l) => l.toFixed(2)).join(' ')}, node ${process.version}\n`);
  const base = summary(times.get(MODES[0])!);
  for (const m of MODES) {
    const s = summary(times.get(m)!);
    process.stdout.write(`${m.padEnd(7)} (${levels.get(m)}): p50 ${s.p50.toFixed(1)} ms  p99 ${s.p99.toFixed(1)} ms  max ${s.max.toFixed(1)} ms  ratio to ${MODES[0]}: p50 ${(s.p50 / base.p50).toFixed(2)}x p99 ${(s.p99 / base.p99).toFixed(2)}x\n`);
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
