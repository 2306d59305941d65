/**
 * What `REDIS_URL` (and `REDIS_CLUSTER`) name: one Redis server, or the seed
 * nodes of a Redis Cluster. Parsed here, without ioredis, so configuration can
 * validate it at start.
 *
 *   redis://[user:pass@]host:port[/db]               one server
 *   rediss://...                                      the same over TLS
 *   redis-cluster://[user:pass@]h1:p1,h2:p2,...       a cluster (seed nodes; any subset will do)
 *   rediss-cluster://...                              a cluster over TLS
 *   REDIS_CLUSTER=1 with redis:// or rediss://       a cluster too (one or more seed nodes)
 */
export interface RedisNode {
  host: string;
  port: number;
}

export interface RedisTarget {
  cluster: boolean;
  tls: boolean;
  nodes: RedisNode[];
  username?: string;
  password?: string;
  /** Database index; a cluster has only database 0. */
  db: number;
}

/**
 * How a `rediss://` connection checks the server's certificate
 * (REDIS_TLS_REJECT_UNAUTHORIZED, REDIS_TLS_CA; docs/deploy.md). Node's
 * defaults (the system's CAs, verification on) unless one of them says
 * otherwise.
 */
export interface RedisTlsOptions {
  /** false: accept any certificate (a provider whose certificates are self-signed, as Heroku Redis's are). */
  readonly rejectUnauthorized: boolean;
  /** PEM of the CA(s) that sign the server's certificate, instead of the system's; null: the system's. */
  readonly ca: string | null;
}

export class RedisTargetError extends Error {
  override name = 'RedisTargetError';
}

const SCHEME = /^(rediss?)(-cluster)?:\/\/(.*)$/i;

function node(spec: string): RedisNode {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\[\]]+)(?::(\d{1,5}))?$/.exec(spec);
  if (!m) throw new RedisTargetError(`bad host:port ${JSON.stringify(spec)}`);
  const port = m[2] ? Number(m[2]) : 6379;
  if (port < 1 || port > 65535) throw new RedisTargetError(`bad port in ${JSON.stringify(spec)}`);
  return { host: m[1].replace(/^\[|\]$/g, ''), port };
}

function credentials(auth: string): { username?: string; password?: string } {
  if (!auth) return {};
  const sep = auth.indexOf(':');
  const user = decodeURIComponent(sep >= 0 ? auth.slice(0, sep) : auth);
  const pass = sep >= 0 ? decodeURIComponent(auth.slice(sep + 1)) : undefined;
  // `redis://:pass@host` is the classic password-only form.
  return { ...(user ? { username: user } : {}), ...(pass !== undefined ? { password: pass } : {}) };
}

export function parseRedisTarget(url: string, clusterFlag = false): RedisTarget {
  const m = SCHEME.exec(url.trim());
  if (!m) throw new RedisTargetError('must use redis://, rediss://, redis-cluster:// or rediss-cluster://');
  const [, scheme, clusterSuffix, rest] = m;
  const cluster = Boolean(clusterSuffix) || clusterFlag;
  const end = rest.search(/[/?#]/);
  const authority = end >= 0 ? rest.slice(0, end) : rest;
  const path = end >= 0 ? rest.slice(end) : '';
  const at = authority.lastIndexOf('@');
  const hosts = authority.slice(at + 1);
  if (!hosts) throw new RedisTargetError('names no host');
  const nodes = hosts.split(',').map((h) => node(h.trim()));
  if (nodes.length > 1 && !cluster) throw new RedisTargetError('lists several hosts; use redis-cluster:// (or REDIS_CLUSTER=1) for a cluster');
  const dbText = /^\/(\d*)/.exec(path)?.[1] ?? '';
  const db = dbText ? Number(dbText) : 0;
  if (cluster && db !== 0) throw new RedisTargetError('names database ' + db + ', but a Redis Cluster has only database 0');
  return { cluster, tls: scheme.toLowerCase() === 'rediss', nodes, db, ...credentials(at >= 0 ? authority.slice(0, at) : '') };
}

/** The inverse of parseRedisTarget for a cluster's seed nodes, without credentials (for logs and child processes). */
export function clusterUrl(nodes: RedisNode[], tls = false): string {
  return `${tls ? 'rediss' : 'redis'}-cluster://${nodes.map((n) => `${n.host}:${n.port}`).join(',')}`;
}
