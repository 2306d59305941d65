import { Redis, type RedisOptions } from 'ioredis';

export type RedisRole = 'command' | 'worker' | 'subscriber';

/**
 * The one place Redis connections are made. BullMQ workers and subscribers
 * block, so they need `maxRetriesPerRequest: null` (BullMQ refuses them
 * otherwise); request-path connections keep a bound so that an outage fails
 * a request quickly instead of hanging it.
 */
export function createRedis(url: string, role: RedisRole, name: string, onError?: (err: Error) => void): Redis {
  const opts: RedisOptions = {
    connectionName: `troupe:${name}`,
    enableReadyCheck: true,
    lazyConnect: false,
    maxRetriesPerRequest: role === 'command' ? 2 : null,
    retryStrategy: (times) => Math.min(times * 100, 2000),
    connectTimeout: 5000,
  };
  if (role === 'command') {
    // A command issued while disconnected fails at once rather than queueing
    // until the request times out; readiness checks rely on that.
    opts.enableOfflineQueue = true;
    opts.commandTimeout = 5000;
  }
  const redis = new Redis(url, opts);
  // ioredis reconnects by itself; without a listener every failed attempt
  // would print an "Unhandled error event". Report each outage once.
  let reported = false;
  redis.on('error', (err: Error) => {
    if (!reported) onError?.(err);
    reported = true;
  });
  redis.on('ready', () => {
    reported = false;
  });
  return redis;
}
