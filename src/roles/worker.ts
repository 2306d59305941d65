import { once } from '../lifecycle/shutdown.js';
import type { Core } from './core.js';

const REAP_EVERY_MS = 10 * 60 * 1000;

/** Session and router-proxy actors, and the reaper of expired idempotency keys. */
export async function startWorker(core: Core): Promise<void> {
  const lockMs = Number(process.env.TROUPE_ACTOR_LOCK_MS || 30_000);
  const { startSessionActors } = await import('../../actors/session/worker.js');
  const { startRouterProxy } = await import('../../actors/router-proxy/worker.js');
  const { startBatchActor } = await import('../../actors/batch/worker.js');
  await startSessionActors(core, lockMs);
  await startRouterProxy(core, 32, lockMs);
  const { startToolRunner } = await import('../../actors/tool-runner/worker.js');
  await startToolRunner(core, lockMs);
  await startBatchActor(core, 16, lockMs);
  // No TTL indexes (FerretDB has none): expired keys are reaped periodically.
  const reaper = setInterval(() => {
    core.stores.idempotency.reap().catch((err: Error) => core.log.warn({ err: err.message }, 'idempotency reaper failed'));
  }, REAP_EVERY_MS);
  reaper.unref();
  core.shutdown.add(once('reaper', async () => clearInterval(reaper)));
  core.log.info({ role: 'worker', actors: ['session', 'router-proxy', 'tool-runner', 'batch'] }, 'worker started');
}
