/**
 * A code agent's replay cost (figures, not pass/fail): the wall time of one step (runInSandbox with the agent
 * shim) of a run that makes 2,500 sequential ctx.tool calls, with a journal of 0, 10, 50 and 200 recorded results,
 * so the step replays that many calls before it reports the next one. The step at journal 0 is sandbox start-up
 * and the run's own work; the difference is the replay. Also prints what a whole 200-step turn costs in steps,
 * summed from the fitted per-position cost, against 200 steps of the journal-0 cost (no replay).
 */
import { chmodSync, chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { sandboxCapabilities } from '../../src/lib/sandbox/capabilities.js';
import { runInSandbox } from '../../src/lib/sandbox/run.js';
import { SANDBOX_UID } from '../../src/lib/sandbox/types.js';
import { benchArgs } from '../support/args.js';
import { summary } from '../support/percentiles.js';

const USAGE = 'Usage: node dist/bench/code-agent-replay/run.js [--calls 10] [--lengths 0,10,50,200]';
const values = benchArgs(USAGE, { calls: { type: 'string', default: '10' }, lengths: { type: 'string', default: '0,10,50,200' } }, ['calls']);
const CALLS = Number(values.calls);
const LENGTHS = values.lengths!.split(',').map(Number);

const AGENT = `exports.agent = { async run(ctx) {
  let total = 0;
  for (let i = 0; i < 2500; i++) total = (await ctx.tool('add', { a: total, b: 1 })).sum;
  return 'total ' + total;
} };`;

function journal(n: number) {
  return Array.from({ length: n }, (_, i) => ({ position: i, kind: 'tool', name: 'add', arguments: { a: i, b: 1 }, result: { ok: true, output: { sum: i + 1 } } }));
}

async function step(dir: string, scratch: string, n: number): Promise<number> {
  const t0 = performance.now();
  const r = await runInSandbox({ rootDir: dir, handlerPath: join(dir, 'agent.js'), exportName: 'agent', agentStep: true, args: { input: 'go', message: null, transcript: [], journal: journal(n) }, env: {}, timeoutMs: 30_000, memoryMb: 128, internetAccess: false, scratchDir: scratch });
  const out = r.ok ? (r.output as { kind: string; calls?: { position: number }[] }) : null;
  if (!out || out.kind !== 'suspend' || out.calls?.[0]?.position !== n) throw new Error(`step at ${n} failed: ${JSON.stringify(r)}`);
  return performance.now() - t0;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-bench-replay-'));
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, 'agent.js'), AGENT);
  const scratch = mkdtempSync(join(tmpdir(), 'troupe-bench-replay-scratch-'));
  if (process.getuid?.() === 0) chownSync(scratch, SANDBOX_UID, SANDBOX_UID);
  const times = new Map<number, number[]>(LENGTHS.map((n) => [n, []]));
  try {
    for (const n of LENGTHS) await step(dir, scratch, n); // warm-up
    // Lengths alternate so drift on a shared host falls on all of them.
    for (let i = 0; i < CALLS; i++) for (const n of LENGTHS) times.get(n)!.push(await step(dir, scratch, n));
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(scratch, { recursive: true, force: true });
  }
  process.stdout.write(`code agent step by journal length, ${CALLS} steps each, sandbox ${sandboxCapabilities().level}, ${cpus().length} cores, load ${loadavg().map((l) => l.toFixed(2)).join(' ')}, node ${process.version}\n`);
  const p50 = (n: number) => summary(times.get(n)!).p50;
  const base = p50(LENGTHS[0]);
  for (const n of LENGTHS) {
    const s = summary(times.get(n)!);
    process.stdout.write(`journal ${String(n).padStart(4)}: step p50 ${s.p50.toFixed(1)} ms  p99 ${s.p99.toFixed(1)} ms  replay (over journal ${LENGTHS[0]}) ${(s.p50 - base).toFixed(1)} ms\n`);
  }
  const last = LENGTHS[LENGTHS.length - 1];
  const perPosition = last > LENGTHS[0] ? (p50(last) - base) / (last - LENGTHS[0]) : 0;
  const turn = Array.from({ length: 200 }, (_, n) => base + perPosition * n).reduce((a, b) => a + b, 0);
  process.stdout.write(`per journaled call: ${(perPosition * 1000).toFixed(1)} µs; a 200-step turn: ${(turn / 1000).toFixed(1)} s of steps, of which replay ${((turn - 200 * base) / 1000).toFixed(2)} s\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
