/**
 * Fair share of the tool-runner queue (issue 29, item 5): how long org B's
 * one call waits behind org A's backlog, and what ranking costs one org
 * alone. Both with the tool-runner's real address, in this process, against
 * local Redis + the MongoDB-wire server; handlers sleep instead of running a
 * sandbox. Each figure is taken with ranking on and off in the same run.
 *   --n: org A's backlog, and the calls of the single-org run
 *   --ms: how long each of org A's calls runs; --concurrency: slots
 * Figures, not pass/fail.
 */
import { defineActor } from '../../actors/runtime/actor.js';
import { Dispatcher } from '../../actors/runtime/dispatcher.js';
import { ActorRuntime } from '../../actors/runtime/runtime.js';
import { TOOL_RUNNER, type ToolRunJob } from '../../src/domain/actors/tool-runner.js';
import { startLocalServices } from '../../infra/services/local-services.js';
import { createLogger } from '../../src/lib/log/logger.js';
import { startRoles } from '../../src/roles/start.js';
import { benchArgs } from '../support/args.js';

const USAGE = 'Usage: node dist/bench/fairshare/run.js [--n 2000] [--ms 50] [--concurrency 4]';
const values = benchArgs(USAGE, { n: { type: 'string', default: '2000' }, ms: { type: 'string', default: '50' }, concurrency: { type: 'string', default: '4' } }, ['n', 'ms', 'concurrency']);
const N = Number(values.n);
const CALL_MS = Number(values.ms);
const CONCURRENCY = Number(values.concurrency);

async function main(): Promise<void> {
  const services = await startLocalServices({ log: () => undefined });
  const env = { MONGODB_URL: services.mongodbUrl, REDIS_URL: services.redisUrl, TROUPE_MONGODB_DB: 'bench_fairshare', LOG_LEVEL: 'warn' };
  const running = await startRoles(['web'], env, createLogger('warn'));
  const { queues } = running.core.plane;
  const fair = running.core.plane.dispatcher;
  const plain = new Dispatcher(queues, fair.shards);
  let seq = 0;
  const job = (org: string): ToolRunJob => ({ org_id: org, session_id: `ses_${org}`, message_id: `msg_${org}`, attempt: 1, tool_call_id: `${org}-${++seq}`, tool_name: 't', arguments: {} });
  const send = (d: Dispatcher, j: ToolRunJob) => d.send([{ to: TOOL_RUNNER, name: 'tool.run', data: j, job_id: `bench-${j.tool_call_id}`, priority: 'interactive' }]);

  /** Runs `fill` against a fresh tool-runner worker whose handler sleeps `ms` (or only org A's calls do); resolves once `done` says so. */
  async function withWorker(ms: (j: ToolRunJob) => number, body: (started: Map<string, number>, ran: () => number) => Promise<void>): Promise<void> {
    const runtime = new ActorRuntime({ queues, dispatcher: fair, log: running.core.log, lockMs: 30_000 });
    const started = new Map<string, number>();
    await runtime.start(defineActor<ToolRunJob, null>({
      address: TOOL_RUNNER,
      handle: async (_ctx, j) => {
        started.set(j.tool_call_id, performance.now());
        const wait = ms(j);
        if (wait) await new Promise((r) => setTimeout(r, wait));
        return {};
      },
    }), null, { concurrency: CONCURRENCY, gateBatch: false });
    try {
      await body(started, () => started.size);
    } finally {
      await runtime.close();
      await queues.queue(TOOL_RUNNER.name).obliterate({ force: true });
    }
  }
  const until = async (ok: () => boolean) => {
    while (!ok()) await new Promise((r) => setTimeout(r, 5));
  };

  try {
    const modes = [['ranked', fair], ['first come first served', plain]] as const;
    // One org alone: N instant calls sent one per turn, as sessions send them; wall time to run them all.
    // Twice each, alternating, the first round a warm-up.
    for (const round of [1, 2]) {
      for (const [label, d] of modes) {
        await withWorker(() => 0, async (_s, ran) => {
          const t0 = performance.now();
          for (let i = 0; i < N; i++) await send(d, job('org_solo'));
          await until(() => ran() === N);
          if (round === 2) console.log(`${label}: one org, ${N} calls sent one at a time and run: ${((performance.now() - t0) / 1000).toFixed(2)} s`);
        });
      }
    }
    for (const [label, d] of modes) {
      await withWorker((j) => (j.org_id === 'org_a' ? CALL_MS : 0), async (started, ran) => {
        for (let i = 0; i < N; i += 100) await d.send(Array.from({ length: Math.min(100, N - i) }, () => job('org_a')).map((j) => ({ to: TOOL_RUNNER, name: 'tool.run', data: j, job_id: `bench-${j.tool_call_id}` })));
        await until(() => ran() >= CONCURRENCY);
        const b = job('org_b');
        const sent = performance.now();
        await send(d, b);
        await until(() => started.has(b.tool_call_id));
        console.log(`${label}: org B's call waited ${(started.get(b.tool_call_id)! - sent).toFixed(0)} ms behind org A's ${N} calls of ${CALL_MS} ms (${CONCURRENCY} slots); ${ran() - 1} of A's had started`);
      });
      await running.core.redis.del(running.core.keys.fairShare(TOOL_RUNNER.name, 'org_a'));
    }
  } finally {
    await running.close();
    await services.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
