import { once } from '../lifecycle/shutdown.js';
import { logReap, reap } from '../maintenance/reaper.js';
import type { Core } from './core.js';

const REAP_EVERY_MS = 10 * 60 * 1000;

/** Session, router-proxy, tool-runner and batch actors, the stranded-work sweeper and the periodic reaper. */
export async function startWorker(core: Core): Promise<void> {
  const lockMs = core.config.actorLockMs;
  const { startSessionActors } = await import('../../actors/session/worker.js');
  const { startRouterProxy } = await import('../../actors/router-proxy/worker.js');
  const { startToolRunner } = await import('../../actors/tool-runner/worker.js');
  const { startBatchActor } = await import('../../actors/batch/worker.js');
  await startSessionActors(core, lockMs);
  const { startSweeper } = await import('../../actors/session/sweep-loop.js');
  startSweeper(core);
  await startRouterProxy(core, 32, lockMs);
  await startToolRunner(core, lockMs);
  await startBatchActor(core, 16, lockMs);
  // No TTL indexes (FerretDB has none): expired records are reaped periodically.
  const { dataPlane } = await import('../../actors/runtime/data-plane.js');
  const mailbox = dataPlane(core).mailbox;
  const hooks = {
    deleteSession: (s: { _id: string; priority?: 'interactive' | 'batch' }) => mailbox.send({ session_id: s._id, command: { kind: 'session.delete', command_id: `retention-${s._id}` } }, s.priority ?? 'interactive'),
  };
  const reaper = setInterval(() => {
    reap(core.stores, Date.now(), hooks).then(
      (r) => logReap(core.log, r),
      (err: Error) => core.log.warn({ err: err.message }, 'reaper failed'),
    );
  }, REAP_EVERY_MS);
  reaper.unref();
  core.shutdown.add(once('reaper', async () => clearInterval(reaper)));
  core.log.info({ role: 'worker', actors: ['session', 'router-proxy', 'tool-runner', 'batch'] }, 'worker started');
}
