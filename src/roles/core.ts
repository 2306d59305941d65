import { JobSchedulerClock } from '../lib/queues/job-schedulers.js';
import type { Db, MongoClient } from 'mongodb';
import { QueueFactory } from '../lib/queues/queues.js';
import { createRedis, firstTlsRefusal, type RedisClient } from '../lib/redis/connection.js';
import { RedisKeys } from '../lib/redis/keys.js';
import { Dispatcher } from '../../actors/runtime/dispatcher.js';
import { FairShare } from '../../actors/runtime/fair-share.js';
import { ConfigError, type Config } from '../lib/config/config.js';
import { SecretBox } from '../lib/crypto/secret-box.js';
import { RepeatedErrors } from '../lib/log/repeated-errors.js';
import type { AppDeps } from '../edge/api/deps.js';
import { once, ShutdownList } from '../lib/lifecycle/shutdown.js';
import type { Logger } from '../lib/log/logger.js';
import { Drain } from '../lib/lifecycle/drain.js';
import { createLimits, type Limits } from '../lib/limits/limits.js';
import { Budgets } from '../lib/budgets/budgets.js';
import { BudgetCounters } from '../lib/budgets/budget-counters.js';
import { budgetThresholdWebhooks } from '../app/budget-webhooks.js';
import { Metrics } from '../lib/metrics/metrics.js';
import { PubSubHub } from '../lib/pubsub/hub.js';
import { bootstrapKeys } from '../store/bootstrap.js';
import { ensureIndexes } from '../store/indexes.js';
import { driverFixEvents, type CaughtWhere } from '../store/driver-fix.js';
import { connectMongo } from '../store/mongo.js';
import { createStores, type Stores } from '../store/stores.js';
import { SessionHeads } from '../app/sessions/session-heads.js';

/**
 * QUIT when connected (lets replies in flight arrive); otherwise, or if QUIT
 * does not answer within a second, drop the socket. Never waits on a Redis
 * that is down.
 */
async function closeRedis(conn: RedisClient): Promise<void> {
  if (conn.status !== 'ready') {
    conn.disconnect();
    return;
  }
  const timer = setTimeout(() => conn.disconnect(), 1000);
  try {
    await conn.quit();
  } catch {
    conn.disconnect();
  } finally {
    clearTimeout(timer);
  }
}

/** Queues, the dispatcher over them, and the process's one subscriber: built once per process, here. */
export interface DataPlane {
  queues: QueueFactory;
  dispatcher: Dispatcher;
  hub: PubSubHub;
}

/** Connections, stores and the data plane shared by every role in this process, opened once. */
export interface Core {
  config: Config;
  log: Logger;
  /** The current MongoDB client (it may be replaced when wedged: see store/mongo-watchdog.ts). */
  readonly mongo: MongoClient;
  /** Calls `fn` with the current client and with each replacement (listeners that must follow it). */
  onMongoClient(fn: (client: MongoClient) => void): void;
  /** Whether MongoDB answered a heartbeat lately (store/mongo.ts, UNANSWERED_MS). */
  mongoAnswering(): boolean;
  /** Always the current client's database. */
  db: Db;
  redis: RedisClient;
  keys: RedisKeys;
  box: SecretBox;
  metrics: Metrics;
  stores: Stores;
  /** Request rates and the running-session cap, shared by the web and router roles. */
  limits: Limits;
  /** Spend budgets, shared by the web, router and worker roles. */
  budgets: Budgets;
  /** Begins on SIGTERM, before anything closes. */
  drain: Drain;
  plane: DataPlane;
  shutdown: ShutdownList;
  /** Opens another Redis connection (blocking clients, subscribers), closed at shutdown. */
  redisFor(role: 'worker' | 'subscriber', name: string): RedisClient;
}

function openPlane(config: Config, log: Logger, keys: RedisKeys, redis: RedisClient, redisFor: Core['redisFor'], shutdown: ShutdownList): DataPlane {
  let reported = false;
  const queues = new QueueFactory(keys, redis, (name) => redisFor('worker', name), (err) => {
    if (!reported) log.warn({ err: err.message }, 'queue connection error');
    reported = true;
  });
  // Closed in reverse: the queues before the connection they use.
  shutdown.add(once('queues', () => queues.close()));
  let hub: PubSubHub | null = null;
  return {
    queues,
    dispatcher: new Dispatcher(queues, config.sessionShards, new FairShare({ redis, key: (actor, tenant) => keys.fairShare(actor, tenant) })),
    // Opened on first use: web nodes (streams, replies) and workers (message cancels) subscribe.
    get hub() {
      if (!hub) {
        const opened = new PubSubHub(redisFor('subscriber', 'hub'), {
          onSilent: (ms) => log.warn({ silent_ms: ms }, 'redis subscriber did not answer a PING: reconnecting it; streams then read what they missed from the ledger'),
        });
        shutdown.add(once('pubsub-hub', () => opened.close()));
        hub = opened;
      }
      return hub;
    },
  };
}

/** The composition root's first step: connections, stores and the data plane for this process. */
export async function openCore(config: Config, log: Logger, role: string, opts: { monitorCommands?: boolean } = {}): Promise<Core> {
  const shutdown = new ShutdownList(log);
  const metrics = new Metrics(role);
  const onCaught = (when: CaughtWhere) => {
    metrics.mongoClosedSocketWrites.inc({ when });
    log.warn({ when }, 'mongodb command written to a closed socket: failed as a dropped connection (driver fix)');
  };
  driverFixEvents.on('caught', onCaught);
  shutdown.add(once('mongo-driver-fix-events', async () => void driverFixEvents.off('caught', onCaught)));
  const mongo = await connectMongo(config.mongodbUrl, config.mongodbDb, `troupe-${role}`, {
    ...opts,
    onReplaced: (reason) => {
      metrics.mongoClientReplacements.inc();
      log.warn({ reason }, 'mongodb client replaced: its server monitor was wedged');
    },
    onReplaceFailed: (err) => log.warn({ err: err.message }, 'mongodb client wedged; its replacement did not connect, trying again'),
  }).catch((err: Error) => {
    // The driver's own errors and the system's (no server answered, refused credentials, a bad option, an SRV
    // name not found) are the operator's to fix in MONGODB_URL: one line naming it. Their messages carry
    // hosts, never the URL's password.
    throw err.name.startsWith('Mongo') || (err as NodeJS.ErrnoException).syscall ? new ConfigError(`${config.mongodbUrlVar}: could not connect to MongoDB: ${err.message}`) : err;
  });
  shutdown.add(mongo);
  if (!mongo.driverFixed) log.warn('the MongoDB driver fix for writes to closed sockets could not be installed (driver internals changed); the watchdog still replaces a wedged client');
  // One warn line per window for all of the process's Redis connections: each reports an outage once, but a
  // worker holds one per queue (~70), so an outage began with ~70 identical lines.
  const redisErrors = new RepeatedErrors((obj, msg) => log.warn(obj, msg), 'redis connection error; reconnecting');
  const onRedisError = (err: Error) => redisErrors.report(err.message);
  const redis = createRedis(config.redisUrl, 'command', role, { cluster: config.redisCluster, tls: config.redisTls, onError: onRedisError });
  const tlsRefused = firstTlsRefusal(redis, 3000);
  shutdown.add(once('redis', () => closeRedis(redis)));
  await ensureIndexes(mongo.db);
  const refused = await tlsRefused;
  if (refused) {
    await shutdown.close();
    throw new ConfigError(`${config.redisUrlVar}: the Redis server's TLS connection was refused (${refused.message}); give the CA that signs its certificate in REDIS_TLS_CA, or set REDIS_TLS_REJECT_UNAUTHORIZED=false for a provider whose certificates are self-signed (Heroku Redis)`);
  }
  const box = new SecretBox(config.masterKeys, config.masterKeyId);
  const stores = createStores(mongo.db, box, mongo.sharded);
  await bootstrapKeys(config, stores, log);
  const keys = new RedisKeys(config.redisPrefix);
  const budgets = new Budgets(new BudgetCounters(redis, keys), stores.orgs, stores.apiKeys, log, metrics);
  // Before Redis closes (the list closes in reverse): unused leased room goes back to the budgets.
  shutdown.add(once('budget-leases', () => budgets.close()));
  const redisFor: Core['redisFor'] = (kind, name) => {
    const conn = createRedis(config.redisUrl, kind, `${role}:${name}`, { cluster: config.redisCluster, tls: config.redisTls, onError: onRedisError });
    shutdown.add(once(`redis:${name}`, () => closeRedis(conn)));
    return conn;
  };
  const plane = openPlane(config, log, keys, redis, redisFor, shutdown);
  budgets.onCrossing = budgetThresholdWebhooks(stores.webhookConfigs, plane.dispatcher, log);
  return {
    config,
    log,
    // The watchdog may replace the client: read it through the handle each time.
    get mongo() {
      return mongo.client;
    },
    onMongoClient: (fn) => mongo.onClient(fn),
    mongoAnswering: () => mongo.answering(),
    db: mongo.db,
    redis,
    keys,
    box,
    metrics,
    stores,
    limits: createLimits({ redis, keys, stores, metrics, log, defaults: config.limits, authFailuresPerMin: config.authFailuresPerMin }),
    budgets,
    drain: new Drain(),
    plane,
    shutdown,
    redisFor,
  };
}

/** The web app's dependencies, from the core: the actors' front door is added by the web role. */
export function appDeps(core: Core): AppDeps {
  return { config: core.config, log: core.log, db: core.db, redis: core.redis, keys: core.keys, box: core.box, metrics: core.metrics, stores: core.stores, outbox: core.plane.dispatcher, scheduleClock: new JobSchedulerClock(core.plane.queues), sessionHeads: new SessionHeads(), limits: core.limits, budgets: core.budgets, drain: core.drain };
}
