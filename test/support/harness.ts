import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import type { Cluster, Redis } from 'ioredis';
import { MongoClient } from 'mongodb';
import { createRedis, isCluster } from '../../src/lib/redis/connection.js';
import { freePort } from '../../infra/services/process.js';
import { createLogger } from '../../src/lib/log/logger.js';
import { startRoles, type Role, type Running } from '../../src/roles/start.js';
import { observeBaseApi } from './api-statuses.js';

/** A Troupe started in-process on random ports, with its own database and Redis prefix. */
export interface Harness {
  running: Running;
  baseUrl: string;
  routerUrl: string;
  apiKey: string;
  routingKey: string;
  env: Record<string, string>;
  /** Every log line written so far, as raw JSON text. */
  logs(): string;
  /** fetch against the base URL with the API key unless headers say otherwise. */
  api(path: string, init?: RequestInit & { json?: unknown }): Promise<Response>;
  close(): Promise<void>;
}

export function requiredEnv(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set; run the integration tests through "npm test"`);
  return v;
}

export function uniqueName(prefix: string): string {
  return `${prefix}_${randomBytes(5).toString('hex')}`;
}

export async function startHarness(opts: { roles?: Role[]; env?: Record<string, string> } = {}): Promise<Harness> {
  const db = uniqueName('troupe_test');
  const prefix = uniqueName('tt');
  const apiKey = `tr_sk_test_${randomBytes(16).toString('hex')}`;
  const routingKey = `tr_rk_test_${randomBytes(16).toString('hex')}`;
  // Real ports up front, so TROUPE_PUBLIC_URL (upload_url, submit_url) points at this server.
  const [webPort, routerPort] = [await freePort(), await freePort()];
  const env: Record<string, string> = {
    MONGODB_URL: requiredEnv('MONGODB_URL'),
    REDIS_URL: requiredEnv('REDIS_URL'),
    TROUPE_MONGODB_DB: db,
    TROUPE_REDIS_PREFIX: prefix,
    TROUPE_BOOTSTRAP_API_KEY: apiKey,
    TROUPE_BOOTSTRAP_ROUTING_KEY: routingKey,
    PORT: String(webPort),
    ROUTER_PORT: String(routerPort),
    TROUPE_PUBLIC_URL: `http://127.0.0.1:${webPort}`,
    TROUPE_ROUTING_PUBLIC_URL: `http://127.0.0.1:${routerPort}`,
    LOG_LEVEL: 'debug',
    // The fake LLM upstreams listen on loopback; tests of the endpoint guard set it back to 0.
    TROUPE_MODELS_ALLOW_PRIVATE: '1',
    // The consent production asks for beside that hatch, for the suites that start roles with NODE_ENV=production.
    TROUPE_I_UNDERSTAND_PRIVATE_NETWORKS: '1',
    TROUPE_SHUTDOWN_TIMEOUT_MS: '2000',
    ...opts.env,
  };
  let logText = '';
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logText += chunk.toString();
      cb();
    },
  });
  const running = await startRoles(opts.roles ?? ['web', 'router', 'worker', 'webhooks'], env, createLogger('debug', sink));
  const baseUrl = `http://127.0.0.1:${running.ports.web}`;
  // Every status this base API answers is checked against the document at the end of the run.
  const unobserve = running.ports.web === undefined ? () => false : observeBaseApi(running.ports.web);
  return {
    running,
    baseUrl,
    routerUrl: `http://127.0.0.1:${running.ports.router}`,
    apiKey,
    routingKey,
    env,
    logs: () => logText,
    api(path, init = {}) {
      const headers = new Headers(init.headers);
      if (!headers.has('Authorization')) headers.set('Authorization', `Bearer ${apiKey}`);
      let body = init.body;
      if (init.json !== undefined) {
        body = JSON.stringify(init.json);
        if (!headers.has('Content-Type')) headers.set('Content-Type', 'application/json');
      }
      return fetch(baseUrl + path, { ...init, headers, body });
    },
    async close() {
      await running.close();
      unobserve();
      await dropTestData(env.MONGODB_URL, db, env.REDIS_URL, prefix);
    },
  };
}

export async function dropTestData(mongoUrl: string, db: string, redisUrl: string, prefix: string): Promise<void> {
  const mongo = new MongoClient(mongoUrl, { directConnection: true, serverSelectionTimeoutMS: 2000 });
  try {
    await mongo.db(db).dropDatabase();
  } finally {
    await mongo.close();
  }
  const redis = createRedis(redisUrl, 'command', 'test-cleanup');
  try {
    // SCAN walks one server's keyspace: on a cluster, walk every master.
    const servers = isCluster(redis) ? await clusterMasters(redis) : [redis];
    for (const server of servers) {
      for (const pattern of [`${prefix}:*`, `{${prefix}:*`]) {
        let cursor = '0';
        do {
          const [next, keys] = await server.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
          cursor = next;
          // One DEL per key: a multi-key DEL must stay within one cluster slot.
          if (keys.length) await Promise.all(keys.map((k) => redis.del(k)));
        } while (cursor !== '0');
      }
    }
  } finally {
    redis.disconnect();
  }
}

/** A cluster's masters, once it knows its slots. */
export async function clusterMasters(cluster: Cluster): Promise<Redis[]> {
  if (cluster.status !== 'ready') await new Promise<void>((resolve, reject) => {
    cluster.once('ready', resolve);
    cluster.once('end', () => reject(new Error('cluster connection ended')));
  });
  return cluster.nodes('master');
}
