import { loadConfig } from '../lib/config/config.js';
import { createLogger, type Logger } from '../lib/log/logger.js';
import { countMongo, startRoundTripCounter } from '../lib/metrics/round-trips.js';
import { once } from '../lib/lifecycle/shutdown.js';
import { startTracing } from '../lib/telemetry/tracing.js';
import { turnMetrics } from '../../actors/runtime/prometheus-observer.js';
import { openCore, type Core } from './core.js';
import { startMetricsServer, watchActorQueues } from './metrics-server.js';

export const ROLES = ['web', 'router', 'worker', 'webhooks'] as const;
export type Role = (typeof ROLES)[number];

export function parseRoles(args: string[]): Role[] {
  if (args.length === 0) throw new Error(`name a role: ${ROLES.join(', ')} or all`);
  const roles = new Set<Role>();
  for (const a of args) {
    if (a === 'all') ROLES.forEach((r) => roles.add(r));
    else if ((ROLES as readonly string[]).includes(a)) roles.add(a as Role);
    else throw new Error(`unknown role ${JSON.stringify(a)}; roles are ${ROLES.join(', ')} and all`);
  }
  return [...roles];
}

export interface Running {
  core: Core;
  ports: { web?: number; router?: number; metrics?: number };
  close(): Promise<void>;
}

/**
 * Starts the given roles in this process. Only the modules of those roles are
 * loaded, so a `router` dyno never loads the actor code and vice versa.
 */
export async function startRoles(roles: Role[], env: NodeJS.ProcessEnv = process.env, log?: Logger): Promise<Running> {
  const config = loadConfig(env);
  // Before the logger, whose lines then carry trace ids; a no-op unless OTEL_* configures an exporter.
  const stopTracing = startTracing(env, roles.join('+'));
  const logger = log ?? createLogger(config.logLevel);
  if (config.privateNetworkHatches.length) logger.warn({ allowed: config.privateNetworkHatches, production: env.NODE_ENV === 'production' }, "private networks allowed: tenants' webhook and model URLs may reach them");
  if (config.redisTls?.rejectUnauthorized === false) logger.warn({ variable: config.redisUrlVar }, 'redis TLS certificate not verified (REDIS_TLS_REJECT_UNAUTHORIZED=false)');
  // TROUPE_ROUND_TRIPS_FILE (benchmarks): count this process's MongoDB and Redis round trips.
  const counting = startRoundTripCounter(env);
  const core = await openCore(config, logger, roles.length === ROLES.length ? 'all' : roles.join('+'), { monitorCommands: counting }).catch(async (err: unknown) => {
    await stopTracing?.();
    throw err;
  });
  if (counting) core.onMongoClient(countMongo);
  // Registered first so it closes last: the spans of everything closing before it are still sent.
  if (stopTracing) core.shutdown.add(once('tracing', stopTracing));
  const ports: Running['ports'] = {};
  const httpless = !roles.includes('web') && !roles.includes('router');
  try {
    // Tenant code runs in web (entrypoints at publish) and worker (tools): probe and judge the sandbox before either serves.
    if (roles.includes('web') || roles.includes('worker')) (await import('../lib/sandbox/policy.js')).enforceSandboxPolicy(config.sandbox, core.log);
    // A process without an HTTP role still answers /metrics and /healthz, on METRICS_PORT: first, so that a
    // worker started while Redis is away (its actors wait for it) is live and scrapable meanwhile.
    if (httpless) ports.metrics = await startMetricsServer(core, roles);
    if (roles.includes('worker') || roles.includes('webhooks')) {
      const { ActorRuntime } = await import('../../actors/runtime/runtime.js');
      const { dispatcher, queues } = core.plane;
      const { Membership } = await import('../../actors/runtime/membership.js');
      const membership = new Membership({ redis: queues.producer, key: core.keys.workerMembers(), log: core.log, fit: () => core.mongoAnswering() });
      const runtime = new ActorRuntime({ queues, dispatcher, log: core.log, lockMs: config.actorLockMs, poisonStalls: config.poisonStalls, observer: turnMetrics(core.metrics), batchSlots: config.workerBatchSlots, membership, keys: core.keys });
      watchActorQueues(core, roles);
      // Draining leaves the worker membership at once: the others take this process's shards on their next beat
      // while it finishes its running turns (both running a shard for a moment is harmless: one turn per shard).
      core.drain.onDrain(() => void runtime.affinity?.leave());
      try {
        if (roles.includes('worker')) await (await import('./worker.js')).startWorker(core, runtime);
        if (roles.includes('webhooks')) await (await import('./webhooks.js')).startWebhooks(core, runtime);
      } finally {
        // Registered after the workers' connections, so that, closing in reverse, the workers stop first.
        core.shutdown.add(once('actor-runtime', () => runtime.close()));
      }
    }
    if (roles.includes('router')) ports.router = (await (await import('./router.js')).startRouter(core)).port;
    if (roles.includes('web')) ports.web = (await (await import('./web.js')).startWeb(core)).port;
  } catch (err) {
    await core.shutdown.close();
    throw err;
  }
  let closing: Promise<void> | null = null;
  return { core, ports, close: () => (closing ??= drainThenClose(core)) };
}

/**
 * Draining first: readiness turns 503, waiters and streams are answered, and
 * the listeners keep serving for TROUPE_DRAIN_DELAY_MS so a load balancer
 * notices; then everything closes in order (listeners, actors, connections).
 */
async function drainThenClose(core: Core): Promise<void> {
  core.drain.begin();
  if (core.config.drainDelayMs > 0) await new Promise((r) => setTimeout(r, core.config.drainDelayMs));
  await core.shutdown.close();
}
