import { StrandedWorkSweeper } from '../../actors/session/sweeper.js';
import { once } from '../lib/lifecycle/shutdown.js';
import type { VersionCache } from '../store/version-cache.js';
import type { Core } from './core.js';

/**
 * Runs the stranded-work sweeper every TROUPE_SWEEP_INTERVAL_MS on each
 * worker. (The session shards' global concurrency, which a Redis restarted
 * empty has lost too, is re-asserted by the runtime's ShardGuard.)
 */
export function startSweeper(core: Core, versions: VersionCache): void {
  const { dispatcher } = core.plane;
  const sweeper = new StrandedWorkSweeper({
    sessions: core.stores.sessions,
    messages: core.stores.messages,
    versions,
    jobs: dispatcher,
    outbox: dispatcher,
    publicUrl: core.config.publicUrl,
    log: core.log,
    redisRunId: async () => /run_id:(\w+)/.exec(await core.redis.info('server'))?.[1] ?? '',
    intervalMs: core.config.sweepIntervalMs,
  });
  let running: Promise<void> | null = null;
  const timer = setInterval(() => {
    // One sweep at a time per process; a slow one (Redis still down) just skips ticks.
    running ??= sweeper
      .sweep()
      .then(() => undefined)
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
