import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { ConnectionOptions } from 'node:tls';
import { parseRedisTarget, type RedisTarget, type RedisTlsOptions } from './target.js';

export type RedisRole = 'command' | 'worker' | 'subscriber';

/** A connection to one Redis server or to a Redis Cluster; both speak the same commands. */
export type RedisClient = Redis | Cluster;

export function isCluster(conn: RedisClient): conn is Cluster {
  return conn instanceof Cluster;
}

export interface RedisConnectOptions {
  /** `REDIS_CLUSTER=1`: treat a redis:// URL as a cluster seed. */
  cluster?: boolean;
  /** Certificate checks of a TLS target (config.redisTls); Node's defaults when absent. */
  tls?: RedisTlsOptions | null;
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
    // Every connection of the process (commands, BullMQ's blocking ones, subscribers, a cluster's per-node ones)
    // is made here, so each checks the certificate the same way.
    ...(target.tls ? { tls: tlsOptions(opts.tls) } : {}),
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
    },
  };
  return new Cluster(target.nodes, options);
}

function tlsOptions(tls: RedisTlsOptions | null | undefined): ConnectionOptions {
  if (!tls) return {};
  return { rejectUnauthorized: tls.rejectUnauthorized, ...(tls.ca ? { ca: tls.ca } : {}) };
}

/** OpenSSL's and Node's codes for a certificate the client would not accept, and for TLS spoken to a plain port. */
const CERTIFICATE_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** The TLS refusal inside an ioredis error, if that is what it is (a cluster wraps its nodes' errors). */
export function tlsRefusal(err: Error): Error | null {
  const code = (err as NodeJS.ErrnoException).code ?? '';
  if (CERTIFICATE_CODES.has(code) || code.startsWith('ERR_SSL_')) return err;
  const inner = (err as { lastNodeError?: Error }).lastNodeError;
  return inner ? tlsRefusal(inner) : null;
}

/**
 * How a new connection's first attempt ended, for the start: the TLS refusal
 * if it was one, else null (ready, or any other failure, which ioredis retries
 * and the roles wait out as before). A refused certificate never heals by
 * retrying: only the configuration can change it, so the start fails on it
 * with one line instead of logging reconnects forever. Bounded by `ms`: a
 * server that does not answer is not waited for here.
 */
export function firstTlsRefusal(conn: RedisClient, ms: number): Promise<Error | null> {
  return new Promise((resolve) => {
    const done = (result: Error | null) => {
      clearTimeout(timer);
      conn.off('ready', onReady);
      conn.off('error', onError);
      resolve(result);
    };
    const onReady = () => done(null);
    const onError = (err: Error) => done(tlsRefusal(err));
    const timer = setTimeout(() => done(null), ms);
    timer.unref();
    conn.on('ready', onReady);
    conn.on('error', onError);
  });
}
