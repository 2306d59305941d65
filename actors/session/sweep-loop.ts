import { once } from '../../src/lifecycle/shutdown.js';
import type { Core } from '../../src/roles/core.js';
import { dataPlane } from '../runtime/data-plane.js';
import { sessionQueueName } from '../runtime/queues.js';
import { VersionCache } from './agent-context.js';
import { StrandedWorkSweeper } from './sweeper.js';

/**
 * Runs the stranded-work sweeper every TROUPE_SWEEP_INTERVAL_MS on each worker.
 * Each tick also writes the session shards' global concurrency (1) again: a
 * Redis that restarted empty has lost it, and without it two workers could
 * run one session's commands at once.
 */
export function startSweeper(core: Core): void {
  const plane = dataPlane(core);
  const sweeper = new StrandedWorkSweeper({
    sessions: core.stores.sessions,
    messages: core.stores.messages,
    versions: new VersionCache((org, id) => core.stores.agents.getVersion(org, id)),
    mailbox: plane.mailbox,
    routerProxy: plane.routerProxy,
    toolRunner: plane.toolRunner,
    publicUrl: core.config.publicUrl,
    log: core.log,
    redisRunId: async () => /run_id:(\w+)/.exec(await core.redis.info('server'))?.[1] ?? '',
    intervalMs: core.config.sweepIntervalMs,
  });
  let running: Promise<void> | null = null;
  const tick = async () => {
    for (let shard = 0; shard < core.config.sessionShards; shard++) await plane.queues.queue(sessionQueueName(shard)).setGlobalConcurrency(1);
    await sweeper.sweep();
  };
  const timer = setInterval(() => {
    // One sweep at a time per process; a slow one (Redis still down) just skips ticks.
    running ??= tick()
      .catch((err: Error) => core.log.warn({ err: err.message }, 'stranded-work sweep failed'))
      .finally(() => (running = null));
  }, core.config.sweepIntervalMs);
  timer.unref();
  core.shutdown.add(
    once('stranded-work-sweeper', async () => {
      clearInterval(timer);
      await running;
    }),
  );
}
