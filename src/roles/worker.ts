import type { ActorRuntime } from '../../actors/runtime/runtime.js';
import { once } from '../lib/lifecycle/shutdown.js';
import { logReap, reap } from '../app/reaper.js';
import { VersionCache } from '../store/version-cache.js';
import { CancelRegistry } from '../lib/pubsub/cancels.js';
import { decodeAgentDeleted } from '../lib/pubsub/agent-deletions.js';
import { SessionCache } from '../../actors/session/session-cache.js';
import { batchPorts, routerProxyPorts, sessionPorts, toolRunnerPorts } from './actor-ports.js';
import type { Core } from './core.js';
import { startSweeper } from './sweeper.js';
import { startScheduleTicks } from './schedule-ticks.js';

const REAP_EVERY_MS = 10 * 60 * 1000;

/** Session, router-proxy, tool-runner and batch actors, the stranded-work sweeper and the periodic reaper. */
export async function startWorker(core: Core, runtime: ActorRuntime): Promise<void> {
  const { sessionActor } = await import('../../actors/session/actor.js');
  const { routerProxyActor } = await import('../../actors/router-proxy/actor.js');
  const { toolRunnerActor } = await import('../../actors/tool-runner/actor.js');
  const { batchActor } = await import('../../actors/batch/actor.js');
  const versions = new VersionCache((org, id) => core.stores.agents.getVersion(org, id));
  // Listening before the actor starts, so no turn runs on a copy that missed an agent's deletion.
  const sessionCache = new SessionCache();
  const stopDeletions = await core.plane.hub.subscribe(core.keys.agentDeletions(), (raw) => {
    const notice = decodeAgentDeleted(raw);
    if (notice) sessionCache.agentDeleted(notice.agentId, notice.deletedAt);
  });
  core.shutdown.add(once('agent-deletions-listener', async () => stopDeletions()));
  await runtime.start(sessionActor, sessionPorts(core, versions, sessionCache), { budgetMs: core.config.turnBudgetMs });
  startSweeper(core, versions);
  // One listener per process: a cancelled message's model calls and tool runs here are aborted.
  const cancels = new CancelRegistry();
  await cancels.listen((channel, listener) => core.plane.hub.subscribe(channel, listener), core.keys.messageCancels());
  core.shutdown.add(once('cancel-listener', async () => cancels.close()));
  // Model calls and tool runs wait on the outside world: they do not take the process's batch slots.
  await runtime.start(routerProxyActor, routerProxyPorts(core, versions, cancels), { concurrency: 32, gateBatch: false });
  await runtime.start(toolRunnerActor, toolRunnerPorts(core, versions, cancels), { concurrency: core.config.toolRunnerConcurrency, gateBatch: false });
  await runtime.start(batchActor, batchPorts(core), { concurrency: 16 });
  startScheduleTicks(core);
  // No TTL indexes (FerretDB has none): expired records are reaped periodically.
  const { sessionCommand, sessionDelete } = await import('../domain/actors/session.js');
  const hooks = {
    // Deleted by the session's own actor, so no turn of it runs meanwhile.
    deleteSession: (s: { _id: string; priority?: 'interactive' | 'batch' }) =>
      core.plane.dispatcher.send([sessionCommand(s._id, sessionDelete({ retention: s._id }), s.priority ?? 'interactive')]),
    retentionAfter: new Map<string, string>(),
    scheduleRunRetentionDays: core.config.scheduleRunRetentionDays,
  };
  const reaper = setInterval(() => {
    reap(core.stores, Date.now(), hooks).then(
      (r) => logReap(core.log, r),
      (err: Error) => core.log.warn({ err: err.message }, 'reaper failed'),
    );
  }, REAP_EVERY_MS);
  reaper.unref();
  core.shutdown.add(once('reaper', async () => clearInterval(reaper)));
  core.log.info({ role: 'worker', actors: ['session', 'router-proxy', 'tool-runner', 'batch'], schedule_ticks: true }, 'worker started');
}
