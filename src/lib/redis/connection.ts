import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { parseRedisTarget, type RedisTarget } from './target.js';

export type RedisRole = 'command' | 'worker' | 'subscriber';

/** A connection to one Redis server or to a Redis Cluster; both speak the same commands. */
export type RedisClient = Redis | Cluster;

export function isCluster(conn: RedisClient): conn is Cluster {
  return conn instanceof Cluster;
}

export interface RedisConnectOptions {
  /** `REDIS_CLUSTER=1`: treat a redis:// URL as a cluster seed. */
  cluster?: boolean;
  onError?: (err: Error) => void;
}

/**
 * The one place Redis connections are made. BullMQ workers and subscribers
 * block, so they need `maxRetriesPerRequest: null` (BullMQ refuses them
 * otherwise); request-path connections keep a bound so that an outage fails
 * a request quickly instead of hanging it.
 */
export function createRedis(url: string, role: RedisRole, name: string, opts: RedisConnectOptions = {}): RedisClient {
  const target = parseRedisTarget(url, opts.cluster);
  const common: RedisOptions = {
    connectionName: `troupe:${name}`,
    maxRetriesPerRequest: role === 'command' ? 2 : null,
    connectTimeout: 5000,
    // A command stuck on a dead socket fails the request instead of hanging it;
    // blocking commands (BZPOPMIN) must not have a timeout.
    ...(role === 'command' ? { commandTimeout: 5000 } : {}),
  };
  const redis = target.cluster ? connectCluster(target, role, common) : connectSingle(url, common);
  // ioredis reconnects by itself; without a listener every failed attempt
  // would print an "Unhandled error event". Report each outage once.
  let reported = false;
  redis.on('error', (err: Error) => {
    if (!reported) opts.onError?.(err);
    reported = true;
  });
  redis.on('ready', () => {
    reported = false;
  });
  return redis;
}

function connectSingle(url: string, common: RedisOptions): Redis {
  return new Redis(url, {
    ...common,
    enableReadyCheck: true,
    lazyConnect: false,
    enableOfflineQueue: true,
    retryStrategy: (times) => Math.min(times * 100, 2000),
  });
}

function connectCluster(target: RedisTarget, role: RedisRole, common: RedisOptions): Cluster {
  const options: ClusterOptions = {
    clusterRetryStrategy: (times) => Math.min(times * 100, 2000),
    enableOfflineQueue: true,
    enableReadyCheck: true,
    // Session channels are sharded (SSUBSCRIBE): the subscriber holds one
    // connection per master and each message travels on its slot's shard only,
    // instead of being broadcast over the cluster bus to every node.
    shardedSubscribers: role === 'subscriber',
    // A failover or resharding answers MOVED/TRYAGAIN for a moment; ride it out.
    retryDelayOnMoved: 50,
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
    redisOptions: {
      ...common,
      ...(target.username ? { username: target.username } : {}),
      ...(target.password ? { password: target.password } : {}),
      ...(target.tls ? { tls: {} } : {}),
    },
  };
  return new Cluster(target.nodes, options);
}
