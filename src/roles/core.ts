import type { Redis } from 'ioredis';
import { createRedis } from '../../infra/redis/connection.js';
import { RedisKeys } from '../../infra/redis/keys.js';
import type { Config } from '../config/config.js';
import { SecretBox } from '../crypto/secret-box.js';
import type { AppDeps } from '../http/deps.js';
import { once, ShutdownList } from '../lifecycle/shutdown.js';
import type { Logger } from '../log/logger.js';
import { createLimits } from '../limits/limits.js';
import { Metrics } from '../metrics/metrics.js';
import { bootstrapKeys } from '../store/bootstrap.js';
import { ensureIndexes } from '../store/indexes.js';
import { connectMongo } from '../store/mongo.js';
import { createStores } from '../store/stores.js';

/**
 * QUIT when connected (lets replies in flight arrive); otherwise, or if QUIT
 * does not answer within a second, drop the socket. Never waits on a Redis
 * that is down.
 */
async function closeRedis(conn: Redis): Promise<void> {
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

export interface Core extends AppDeps {
  shutdown: ShutdownList;
  /** Opens another Redis connection (blocking clients, subscribers), closed at shutdown. */
  redisFor(role: 'worker' | 'subscriber', name: string): Redis;
}

/** Connections and stores shared by every role in this process, opened once. */
export async function openCore(config: Config, log: Logger, role: string): Promise<Core> {
  const shutdown = new ShutdownList(log);
  const mongo = await connectMongo(config.mongodbUrl, config.mongodbDb, `troupe-${role}`);
  shutdown.add(mongo);
  const onRedisError = (err: Error) => log.warn({ err: err.message }, 'redis connection error; reconnecting');
  const redis = createRedis(config.redisUrl, 'command', role, onRedisError);
  shutdown.add(once('redis', () => closeRedis(redis)));
  await ensureIndexes(mongo.db);
  const box = new SecretBox(config.masterKeys, config.masterKeyId);
  const stores = createStores(mongo.db, box);
  await bootstrapKeys(config, stores, log);
  const keys = new RedisKeys(config.redisPrefix);
  const metrics = new Metrics(role);
  return {
    config,
    log,
    mongo: mongo.client,
    db: mongo.db,
    redis,
    keys,
    box,
    metrics,
    stores,
    limits: createLimits({ redis, keys, stores, metrics, log, defaults: config.limits }),
    shutdown,
    redisFor(kind, name) {
      const conn = createRedis(config.redisUrl, kind, `${role}:${name}`, onRedisError);
      shutdown.add(once(`redis:${name}`, () => closeRedis(conn)));
      return conn;
    },
  };
}
