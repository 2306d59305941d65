/**
 * What offering ctx.transcript() costs a code agent's step (figures, not pass/fail), by the session's length (0, 10,
 * 50 and 100 earlier turns of ~400 characters each way; 100 is what a step reads at most): the read of the session's
 * messages and the transcript built from them, which every step paid before a message's later steps were sent the
 * transcript only once its run called ctx.transcript() (actors/tool-runner/run-agent-step.ts), against the check such a
 * step pays now (one Redis EXISTS, beside the journal's read); and a sandbox step (journal 0) with that transcript and
 * without it, for scale. One stack in this
 * process on the shared Redis and MongoDB-wire servers (`set -a; . /tmp/shared-services.env`).
 */
import { chmodSync, chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { stepInput } from '../../actors/tool-runner/decide.js';
import type { MessageState } from '../../src/domain/ledger.js';
import { messageState } from '../../src/domain/views/message.js';
import { sandboxCapabilities } from '../../src/lib/sandbox/capabilities.js';
import { runInSandbox } from '../../src/lib/sandbox/run.js';
import { SANDBOX_UID } from '../../src/lib/sandbox/types.js';
import { scriptedAgent } from '../../test/support/agent-fixture.js';
import { startHarness } from '../../test/support/harness.js';
import { benchArgs } from '../support/args.js';
import { summary } from '../support/percentiles.js';

const USAGE = 'Usage: node dist/bench/code-agent-transcript/run.js [--reps 30] [--sizes 0,10,50,100]';
const values = benchArgs(USAGE, { reps: { type: 'string', default: '30' }, sizes: { type: 'string', default: '0,10,50,100' } }, ['reps']);
const REPS = Number(values.reps);
const SIZES = values.sizes!.split(',').map(Number);
const HISTORY_LIMIT = 100; // as src/roles/actor-ports.ts
const TEXT = 'The quarterly figures show revenue up four percent against the prior period, with costs flat. '.repeat(4);

async function main(): Promise<void> {
  const h = await startHarness();
  const dir = mkdtempSync(join(tmpdir(), 'troupe-bench-transcript-'));
  const scratch = mkdtempSync(join(tmpdir(), 'troupe-bench-transcript-scratch-'));
  try {
    const { agentId, orgId } = await scriptedAgent(h, Array.from({ length: Math.max(...SIZES) + 1 }, () => ({ text: TEXT })));
    const sessions = new Map<number, string>();
    for (const n of SIZES) {
      const sid = ((await (await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: {} })).json()) as { id: string }).id;
      for (let i = 0; i < n; i++) {
        const res = await h.api(`/v1/sessions/${sid}/messages/sync`, { method: 'POST', json: { parts: [{ type: 'text', text: TEXT }] } });
        if (res.status !== 200) throw new Error(`send: ${res.status} ${await res.text()}`);
        await res.text();
      }
      sessions.set(n, sid);
    }
    chmodSync(dir, 0o755);
    writeFileSync(join(dir, 'agent.js'), 'exports.agent = { async run(ctx, input) { return (await ctx.model({ input })).text; } };');
    if (process.getuid?.() === 0) chownSync(scratch, SANDBOX_UID, SANDBOX_UID);
    const core = h.running.core;
    const current = { id: 'msg_bench', sequence_number: Number.MAX_SAFE_INTEGER, parts: [{ type: 'text', text: 'hi' }], metadata: null } as unknown as MessageState;
    const step = async (args: Record<string, unknown>) => {
      const t0 = performance.now();
      const r = await runInSandbox({ rootDir: dir, handlerPath: join(dir, 'agent.js'), exportName: 'agent', agentStep: true, args, env: {}, timeoutMs: 30_000, memoryMb: 128, internetAccess: false, scratchDir: scratch });
      if (!r.ok || (r.output as { kind: string }).kind !== 'suspend') throw new Error(`step: ${JSON.stringify(r)}`);
      return performance.now() - t0;
    };
    const t = (n: number) => ({ read: [] as number[], check: [] as number[], withT: [] as number[], without: [] as number[], bytes: 0 });
    const times = new Map(SIZES.map((n) => [n, t(n)]));
    // Sizes alternate so drift on a shared host falls on all of them.
    for (let i = 0; i < REPS; i++) {
      for (const n of SIZES) {
        const x = times.get(n)!;
        let t0 = performance.now();
        const args = stepInput(current, (await core.stores.messages.list(orgId, sessions.get(n)!, HISTORY_LIMIT, 0)).map(messageState), []);
        x.read.push(performance.now() - t0);
        x.bytes = JSON.stringify(args.transcript).length;
        t0 = performance.now();
        await core.redis.exists(core.keys.agentTranscript('msg_bench'));
        x.check.push(performance.now() - t0);
        x.withT.push(await step(args));
        x.without.push(await step(stepInput(current, null, [])));
      }
    }
    process.stdout.write(`code agent step: the transcript's read by session length, ${REPS} reps, sandbox ${sandboxCapabilities().level}, ${cpus().length} cores, load ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
    for (const n of SIZES) {
      const x = times.get(n)!;
      const [read, check, withT, without] = [x.read, x.check, x.withT, x.without].map((v) => summary(v).p50);
      process.stdout.write(`${String(n).padStart(4)} turns (${(x.bytes / 1024).toFixed(0)} KiB): read p50 ${read.toFixed(2)} ms, flag check ${check.toFixed(2)} ms; sandbox step p50 ${withT.toFixed(1)} ms with the transcript, ${without.toFixed(1)} ms without; read = ${((100 * read) / without).toFixed(1)}% of a step\n`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(scratch, { recursive: true, force: true });
    await h.close();
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
