import { createHash, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import type { OrgLimits } from '../../domain/org-limits.js';
import { parseRedisTarget, RedisTargetError, type RedisTlsOptions } from '../redis/target.js';
import type { MetricsAccess } from '../metrics/access.js';
import { DEFAULT_BREAKER, type BreakerPolicy } from '../../domain/breaker.js';

/**
 * Environment → validated, frozen Config. Every variable Troupe reads is
 * parsed here, once, so a bad value fails at start with one clear line
 * instead of surfacing later as a confusing runtime error.
 */
export interface Config {
  readonly port: number;
  readonly routerPort: number;
  /** `/metrics` and `/healthz` of a process running only worker and/or webhooks roles. */
  readonly metricsPort: number;
  /** Who may read /metrics (METRICS_TOKEN, METRICS_PUBLIC; src/lib/metrics/access.ts). */
  readonly metricsAccess: MetricsAccess;
  /** Interface the base API listens on; null = all interfaces. */
  readonly host: string | null;
  /** Interface the routing interface listens on; null = all interfaces. */
  readonly routerHost: string | null;
  readonly mongodbUrl: string;
  /** The variable mongodbUrl came from: `MONGODB_URL`, else Heroku's `MONGODB_URI`; connection errors name it. */
  readonly mongodbUrlVar: MongodbUrlVar;
  readonly mongodbDb: string;
  readonly redisUrl: string;
  /** The variable redisUrl came from: `REDIS_TLS_URL` (Heroku Redis) when set, else `REDIS_URL`. */
  readonly redisUrlVar: RedisUrlVar;
  /** Certificate checks of a `rediss://` target (REDIS_TLS_REJECT_UNAUTHORIZED, REDIS_TLS_CA); null for plain `redis://`. */
  readonly redisTls: RedisTlsOptions | null;
  /** `REDIS_URL` names a Redis Cluster (`redis-cluster://` or `REDIS_CLUSTER=1`). */
  readonly redisCluster: boolean;
  /** Prefix for every Redis key Troupe writes; wrapped in a hash tag per key family. */
  readonly redisPrefix: string;
  readonly masterKeys: ReadonlyMap<string, Buffer>;
  /** Key id used for new encryptions; older ids stay readable for rotation. */
  readonly masterKeyId: string;
  readonly bootstrapApiKey: string | null;
  readonly bootstrapRoutingKey: string | null;
  readonly publicUrl: string;
  readonly routingPublicUrl: string;
  readonly webhooksAllowPrivate: boolean;
  /** TROUPE_MODELS_ALLOW_PRIVATE: model endpoints (`base_url`) may be plain HTTP and private addresses (local runs only). */
  readonly modelsAllowPrivate: boolean;
  /** The `TROUPE_*_ALLOW_PRIVATE` escape hatches that are on, logged at start (privateNetworkHatches). */
  readonly privateNetworkHatches: readonly string[];
  /** TROUPE_EGRESS_ALLOW_PRIVATE: sandboxed tools may reach private addresses through the egress proxy (local runs only). */
  readonly egressAllowPrivate: boolean;
  /** How often workers look for sessions whose queued work Redis lost (TROUPE_SWEEP_INTERVAL_MS). */
  readonly sweepIntervalMs: number;
  /** A request body that sends nothing for this long is answered 408 (TROUPE_BODY_IDLE_TIMEOUT_MS; 0 disables). */
  readonly bodyIdleTimeoutMs: number;
  /** Routing candidates' circuit breakers: ROUTER_BREAKER_FAILURES (0 = off), ROUTER_BREAKER_COOLDOWN_MS. */
  readonly routerBreaker: BreakerPolicy;
  /** ROUTER_ATTEMPT_TIMEOUT_MS: how long one candidate may take to commit (a stream's first content, a buffered answer) before the call falls back; 0 = off. */
  readonly routerAttemptTimeoutMs: number;
  readonly maxFileBytes: number;
  readonly maxBodyBytes: number;
  readonly logLevel: string;
  readonly sessionShards: number;
  readonly syncWaitMs: number;
  readonly shutdownTimeoutMs: number;
  /** After SIGTERM, how long listeners keep serving (with /readyz at 503) before they stop accepting. */
  readonly drainDelayMs: number;
  /** How long a worker holds a job before BullMQ deems it stalled and another worker takes it over. */
  readonly actorLockMs: number;
  /** How many times a message may stall or crash its worker before it is quarantined (failed, never run again). */
  readonly poisonStalls: number;
  /** How long one session turn may run before its message is quarantined (0 = no bound). */
  readonly turnBudgetMs: number;
  /** Lifetime of a source snapshot's upload target (`expires_at`). */
  readonly uploadTtlSeconds: number;
  /** Where the tool-runner extracts versions and makes scratch dirs (absolute). */
  readonly sandboxDir: string;
  /** V8 heap cap of one custom tool call, in MiB. */
  readonly sandboxMemoryMb: number;
  /** Wall clock of one code agent step (its run function replayed up to its next ctx calls), in ms. */
  readonly agentStepTimeoutMs: number;
  /** Extracted agent versions' disk size at most before the least recently used are evicted (0 = no cap). */
  readonly sandboxVersionsMaxBytes: number;
  /** Which sandbox runs tools, its scratch quota, and whether production may run tools below bwrap+seccomp (docs/operations.md). */
  readonly sandbox: SandboxConfig;
  /** Custom tool calls one worker process runs at once. */
  readonly toolRunnerConcurrency: number;
  /** The shortest interval a schedule's cron may fire at (POST /v1/agents/{id}/schedules answers 400 below it). */
  readonly scheduleMinIntervalMs: number;
  /** How long the reaper keeps schedule runs after their tick (GET /v1/schedules/{id}/runs reads back this far). */
  readonly scheduleRunRetentionDays: number;
  /** After one worker start re-armed every schedule, how long other starts skip the scan (app/schedules/reconcile.ts). */
  readonly scheduleReconcileWindowMs: number;
  /** Batch-priority session turns and batch settlements one worker process handles at once; 0 = no bound. */
  readonly workerBatchSlots: number;
  /** Delays in seconds before each webhook retry (before jitter); one retry per entry. */
  readonly webhookRetrySchedule: readonly number[];
  /** Whole-attempt deadline of one webhook delivery. */
  readonly webhookTimeoutMs: number;
  /** Deliveries one webhooks process sends at once. */
  readonly webhookConcurrency: number;
  /** Deliveries to one agent's webhook in flight at once, across every webhooks process (fairness between endpoints). */
  readonly webhookEndpointConcurrency: number;
  /** Default limits of every org; an org's own `limits` override them field by field. 0 = no limit. */
  readonly limits: OrgLimits;
  /** Failed authentications per client address and minute before its requests are refused (0: no limit). */
  readonly authFailuresPerMin: number;
  /** Caps on what is buffered for a peer: upstream answers and events, and session streams (docs/operations.md). */
  readonly buffers: BufferLimits;
}

export interface BufferLimits {
  /** TROUPE_UPSTREAM_MAX_ANSWER_BYTES: a non-streamed (or agent-accumulated) upstream answer. */
  readonly upstreamAnswerBytes: number;
  /** TROUPE_UPSTREAM_MAX_EVENT_BYTES: one SSE event (and line) of a streamed upstream answer. */
  readonly upstreamEventBytes: number;
  /** TROUPE_SSE_MAX_STREAMS_PER_ORG / _PER_KEY: open session streams in one web process (what they cost is its memory); 0 = no cap. */
  readonly sseStreamsPerOrg: number;
  readonly sseStreamsPerKey: number;
  /** TROUPE_SSE_STALL_MS: a session stream whose client has not read for this long is ended with a `retry:` hint. */
  readonly sseStallMs: number;
  /** TROUPE_MCP_MAX_RESULT_BYTES: an MCP tool call's answer on the wire; past it the call fails (docs/mcp.md). */
  readonly mcpResultBytes: number;
  /** TROUPE_MCP_POOL_SESSIONS (0: a session per call) and TROUPE_MCP_POOL_IDLE_MS: MCP sessions a tool-runner keeps for reuse. */
  readonly mcpPool: { sessions: number; idleMs: number };
}

function bufferLimits(env: Env): BufferLimits {
  return Object.freeze({
    upstreamAnswerBytes: int(env, 'TROUPE_UPSTREAM_MAX_ANSWER_BYTES', 32 * 1024 * 1024, 1024, 2 ** 32),
    upstreamEventBytes: int(env, 'TROUPE_UPSTREAM_MAX_EVENT_BYTES', 1024 * 1024, 1024, 2 ** 30),
    mcpResultBytes: int(env, 'TROUPE_MCP_MAX_RESULT_BYTES', 1024 * 1024, 1024, 2 ** 30),
    mcpPool: { sessions: int(env, 'TROUPE_MCP_POOL_SESSIONS', 64, 0, 10_000), idleMs: int(env, 'TROUPE_MCP_POOL_IDLE_MS', 60_000, 100, 3_600_000) },
    sseStreamsPerOrg: int(env, 'TROUPE_SSE_MAX_STREAMS_PER_ORG', 1000, 0, 1e9),
    sseStreamsPerKey: int(env, 'TROUPE_SSE_MAX_STREAMS_PER_KEY', 500, 0, 1e9),
    sseStallMs: int(env, 'TROUPE_SSE_STALL_MS', 30_000, 100, 3_600_000),
  });
}

/** Environment variable of each limit's default, in one place for config, docs and the admin command. */
export const LIMIT_ENV: Readonly<Record<keyof OrgLimits, string>> = Object.freeze({
  api_per_min: 'TROUPE_RATE_LIMIT_API_PER_MIN',
  api_key_per_min: 'TROUPE_RATE_LIMIT_API_KEY_PER_MIN',
  routing_per_min: 'TROUPE_RATE_LIMIT_ROUTING_PER_MIN',
  routing_key_per_min: 'TROUPE_RATE_LIMIT_ROUTING_KEY_PER_MIN',
  running_sessions: 'TROUPE_MAX_RUNNING_SESSIONS',
  routing_tokens_per_min: 'TROUPE_TOKEN_LIMIT_ROUTING_PER_MIN',
  routing_key_tokens_per_min: 'TROUPE_TOKEN_LIMIT_ROUTING_KEY_PER_MIN',
});

/**
 * Defaults: generous enough that a normal integration, the test suite and
 * the benchmarks never meet them (100 base-API requests/s, 1000 routing
 * requests/s, 10,000 sessions running at once, a full batch), tight enough to stop one
 * runaway client from starving the others.
 */
const DEFAULT_LIMITS: OrgLimits = { api_per_min: 6000, api_key_per_min: 6000, routing_per_min: 60_000, routing_key_per_min: 60_000, running_sessions: 10_000, routing_tokens_per_min: 0, routing_key_tokens_per_min: 0 };

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const DEV_MASTER_KEY = 'dev:' + createHash('sha256').update('troupe-insecure-development-key').digest('base64');

function int(env: Env, name: string, dflt: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be an integer, got ${JSON.stringify(raw)}`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

function bool(env: Env, name: string): boolean {
  const raw = (env[name] ?? '').toLowerCase();
  if (raw === '' || raw === '0' || raw === 'false' || raw === 'no') return false;
  if (raw === '1' || raw === 'true' || raw === 'yes') return true;
  throw new ConfigError(`${name} must be 1 or 0, got ${JSON.stringify(env[name])}`);
}

function url(env: Env, name: string, protocols: string[], dflt?: string): string {
  const raw = env[name] || dflt;
  if (!raw) throw new ConfigError(`${name} is required`);
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`${name} is not a valid URL`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must use ${protocols.join(' or ')}, got ${parsed.protocol}`);
  }
  return raw.replace(/\/+$/, '');
}

export type MongodbUrlVar = 'MONGODB_URL' | 'MONGODB_URI';
export type RedisUrlVar = 'REDIS_URL' | 'REDIS_TLS_URL';

/**
 * `MONGODB_URL`, else `MONGODB_URI` (what Heroku's MongoDB add-ons set). Both
 * set to different values is refused: an add-on attached beside an old
 * setting must not silently decide which database the service writes to.
 * The admin command reads the same pair through this.
 */
export function mongodbUrlVar(env: Env): MongodbUrlVar {
  const own = env.MONGODB_URL;
  const addOn = env.MONGODB_URI;
  if (own && addOn && own.trim() !== addOn.trim()) {
    throw new ConfigError('MONGODB_URL and MONGODB_URI are both set and differ; set only one (MONGODB_URI is what Heroku add-ons set)');
  }
  return own || !addOn ? 'MONGODB_URL' : 'MONGODB_URI';
}

/**
 * `REDIS_TLS_URL` when set (Heroku Redis sets it beside `REDIS_URL`, and on
 * its older plans only it is TLS), else `REDIS_URL`: one server or a
 * cluster's seed nodes (src/lib/redis/target.ts).
 */
function redisUrl(env: Env): { name: RedisUrlVar; url: string } {
  const name: RedisUrlVar = env.REDIS_TLS_URL ? 'REDIS_TLS_URL' : 'REDIS_URL';
  const raw = env[name];
  if (!raw) throw new ConfigError('REDIS_URL is required (or REDIS_TLS_URL)');
  try {
    const target = parseRedisTarget(raw, bool(env, 'REDIS_CLUSTER'));
    if (name === 'REDIS_TLS_URL' && !target.tls) throw new ConfigError('REDIS_TLS_URL must use rediss:// or rediss-cluster://');
  } catch (err) {
    if (err instanceof RedisTargetError) throw new ConfigError(`${name} ${err.message}`);
    throw err;
  }
  return { name, url: raw.trim() };
}

/**
 * `REDIS_TLS_REJECT_UNAUTHORIZED` and `REDIS_TLS_CA`, for a `rediss://`
 * target only: set beside a plain URL they would protect nothing, so they are
 * refused there. The CA is PEM text or the path of a PEM file, read at start.
 * Both together are refused too: one verifies against a CA, the other
 * verifies nothing.
 */
function redisTls(env: Env, name: RedisUrlVar, tls: boolean): RedisTlsOptions | null {
  const rejectRaw = env.REDIS_TLS_REJECT_UNAUTHORIZED ?? '';
  const caRaw = (env.REDIS_TLS_CA ?? '').trim();
  if (!tls) {
    if (rejectRaw !== '' || caRaw !== '') throw new ConfigError(`${rejectRaw !== '' ? 'REDIS_TLS_REJECT_UNAUTHORIZED' : 'REDIS_TLS_CA'} is set but ${name} does not use TLS (rediss://)`);
    return null;
  }
  const rejectUnauthorized = rejectRaw === '' ? true : bool(env, 'REDIS_TLS_REJECT_UNAUTHORIZED');
  if (!rejectUnauthorized && caRaw) throw new ConfigError('REDIS_TLS_CA and REDIS_TLS_REJECT_UNAUTHORIZED=false are both set; set one (a CA to verify against, or no verification)');
  return Object.freeze({ rejectUnauthorized, ca: caRaw ? caPem(caRaw) : null });
}

function caPem(raw: string): string {
  let pem = raw;
  if (!raw.startsWith('-----BEGIN')) {
    try {
      pem = readFileSync(raw, 'utf8');
    } catch (err) {
      throw new ConfigError(`REDIS_TLS_CA must be PEM text or the path of a PEM file; cannot read ${JSON.stringify(raw)} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  // A PEM pasted into a one-line setting often carries its line breaks as `\n`.
  pem = pem.replace(/\\n/g, '\n');
  try {
    new X509Certificate(pem);
  } catch {
    throw new ConfigError('REDIS_TLS_CA holds no PEM certificate (-----BEGIN CERTIFICATE-----)');
  }
  return pem;
}

/**
 * `TROUPE_MASTER_KEY` is `<key id>:<base64 32 bytes>`, or several of them
 * separated by commas; the first encrypts, all decrypt. A bare base64 key gets
 * id `k1`.
 */
export function parseMasterKeys(raw: string): { keys: Map<string, Buffer>; currentId: string } {
  const keys = new Map<string, Buffer>();
  let currentId = '';
  for (const [i, part] of raw.split(',').map((s) => s.trim()).filter(Boolean).entries()) {
    const sep = part.indexOf(':');
    const id = sep > 0 ? part.slice(0, sep) : 'k1';
    const material = Buffer.from(sep > 0 ? part.slice(sep + 1) : part, 'base64');
    if (!/^[A-Za-z0-9_-]{1,32}$/.test(id)) throw new ConfigError(`TROUPE_MASTER_KEY has a bad key id ${JSON.stringify(id)}`);
    if (material.length !== 32) throw new ConfigError(`TROUPE_MASTER_KEY key ${id} must be 32 bytes of base64, got ${material.length} bytes`);
    if (keys.has(id)) throw new ConfigError(`TROUPE_MASTER_KEY repeats key id ${id}`);
    keys.set(id, material);
    if (i === 0) currentId = id;
  }
  if (keys.size === 0) throw new ConfigError('TROUPE_MASTER_KEY is empty');
  return { keys, currentId };
}

/**
 * Default webhook retry delays (seconds): roughly doubling, about 28 h in
 * total before jitter (DESIGN §6 asks for at least 24 h). 12 retries after the
 * first attempt.
 */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE: readonly number[] = Object.freeze([30, 60, 120, 300, 600, 1200, 2400, 3600, 7200, 14400, 28800, 43200]);

/** `TROUPE_WEBHOOK_RETRY_SCHEDULE`: comma-separated seconds, e.g. `1,1,1` in tests. */
export function parseRetrySchedule(raw: string | undefined, production: boolean): readonly number[] {
  const name = 'TROUPE_WEBHOOK_RETRY_SCHEDULE';
  if (raw === undefined || raw.trim() === '') return DEFAULT_WEBHOOK_RETRY_SCHEDULE;
  const parts = raw.split(',').map((p) => p.trim());
  if (parts.length > 50) throw new ConfigError(`${name} has ${parts.length} entries; at most 50`);
  const delays = parts.map((p) => {
    if (!/^\d+(\.\d+)?$/.test(p)) throw new ConfigError(`${name} must be comma-separated seconds, got ${JSON.stringify(p)}`);
    const n = Number(p);
    if (n <= 0 || n > 7 * 24 * 3600) throw new ConfigError(`${name} entries must be above 0 and at most 604800 seconds, got ${p}`);
    return n;
  });
  // Receivers rely on a day of retries to ride out an outage; only local runs may shorten it.
  const total = delays.reduce((a, b) => a + b, 0);
  if (production && total < 24 * 3600) throw new ConfigError(`${name} must last at least 24 h in production; it lasts ${total} s`);
  return Object.freeze(delays);
}

/** `TROUPE_SANDBOX_DIR`: absolute, since sandbox permission flags name it; default `<tmp>/troupe-sandbox`. */
function sandboxDir(env: Env): string {
  const raw = env.TROUPE_SANDBOX_DIR || join(tmpdir(), 'troupe-sandbox');
  if (!isAbsolute(raw) || raw.includes(',')) throw new ConfigError('TROUPE_SANDBOX_DIR must be an absolute path without commas');
  return raw;
}

/**
 * `HOST` / `ROUTER_HOST`: an IP literal or host name to bind. Production
 * defaults to all interfaces (a container's port mapping needs that); any
 * other environment defaults to loopback, so a laptop run is not reachable
 * from the network by accident. `*` or `0.0.0.0`/`::` ask for all interfaces.
 */
function host(env: Env, name: string, dflt: string | null): string | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  if (raw === '*') return null;
  const bare = raw.replace(/^\[(.*)\]$/, '$1');
  if (!/^[A-Za-z0-9.:%_-]{1,253}$/.test(bare)) throw new ConfigError(`${name} must be an IP address or host name, got ${JSON.stringify(raw)}`);
  return bare;
}

function apiKey(env: Env, name: string): string | null {
  const raw = env[name];
  if (!raw) return null;
  if (!/^[A-Za-z0-9_\-.]{16,200}$/.test(raw)) {
    throw new ConfigError(`${name} must be 16-200 characters of letters, digits, '_', '-' or '.'`);
  }
  return raw;
}

export interface SandboxConfig {
  mode: 'auto' | 'bwrap' | 'legacy' | 'runsc';
  scratchMb: number;
  production: boolean;
  allowWeak: boolean;
}

const SANDBOX_MODES = ['auto', 'bwrap', 'legacy', 'runsc'] as const;

/** `TROUPE_SANDBOX`, `TROUPE_SANDBOX_SCRATCH_MB`, `TROUPE_SANDBOX_ALLOW_WEAK`. */
function sandboxConfig(env: Env, production: boolean): SandboxConfig {
  const mode = (env.TROUPE_SANDBOX || 'auto') as SandboxConfig['mode'];
  if (!SANDBOX_MODES.includes(mode)) throw new ConfigError(`TROUPE_SANDBOX must be one of ${SANDBOX_MODES.join(', ')}`);
  return Object.freeze({ mode, scratchMb: int(env, 'TROUPE_SANDBOX_SCRATCH_MB', 64, 1, 65_536), production, allowWeak: bool(env, 'TROUPE_SANDBOX_ALLOW_WEAK') });
}

/** In production the public ports serve /metrics only behind a token or when told to (customer audit 2, item 8). */
function metricsAccess(env: Env, production: boolean): MetricsAccess {
  const token = env.METRICS_TOKEN || null;
  if (token !== null && (token.length < 16 || /\s/.test(token))) throw new ConfigError('METRICS_TOKEN must be at least 16 characters, without spaces');
  const open = bool(env, 'METRICS_PUBLIC');
  return Object.freeze({ token, onPublicPorts: !production || token !== null || open });
}

/**
 * The `TROUPE_*_ALLOW_PRIVATE` variables that are on. Each lets tenant-chosen
 * URLs reach private networks, so in production they need a second,
 * deliberate `TROUPE_I_UNDERSTAND_PRIVATE_NETWORKS=1`: one copied from a
 * local .env must not open the platform's own network.
 */
function privateNetworkHatches(env: Env, production: boolean): readonly string[] {
  const on = Object.keys(env).filter((name) => /^TROUPE_[A-Z0-9_]+_ALLOW_PRIVATE$/.test(name) && bool(env, name)).sort();
  if (production && on.length && !bool(env, 'TROUPE_I_UNDERSTAND_PRIVATE_NETWORKS')) {
    throw new ConfigError(`${on.join(', ')} lets tenants' URLs reach private networks; with NODE_ENV=production it also needs TROUPE_I_UNDERSTAND_PRIVATE_NETWORKS=1`);
  }
  return Object.freeze(on);
}

export function loadConfig(env: Env = process.env): Config {
  const production = env.NODE_ENV === 'production';
  const masterRaw = env.TROUPE_MASTER_KEY || (production ? '' : DEV_MASTER_KEY);
  if (!masterRaw) throw new ConfigError('TROUPE_MASTER_KEY is required when NODE_ENV=production');
  const { keys, currentId } = parseMasterKeys(masterRaw);
  const port = int(env, 'PORT', 8080, 0, 65535);
  const routerPort = int(env, 'ROUTER_PORT', 8081, 0, 65535);
  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  const mongoVar = mongodbUrlVar(env);
  const mongodbUrl = url(env, mongoVar, ['mongodb:', 'mongodb+srv:']);
  const redis = redisUrl(env);
  const redisTarget = parseRedisTarget(redis.url, bool(env, 'REDIS_CLUSTER'));
  const prefix = env.TROUPE_REDIS_PREFIX || 'troupe';
  if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(prefix)) throw new ConfigError('TROUPE_REDIS_PREFIX must be 1-64 of [A-Za-z0-9_.:-]');
  const bindHost = host(env, 'HOST', production ? null : '127.0.0.1');
  return Object.freeze({
    port,
    routerPort,
    // Production scrapes a fixed port; elsewhere several workers share one machine, so any free port.
    metricsPort: int(env, 'METRICS_PORT', production ? 9091 : 0, 0, 65535),
    metricsAccess: metricsAccess(env, production),
    host: bindHost,
    routerHost: host(env, 'ROUTER_HOST', bindHost),
    mongodbUrl,
    mongodbUrlVar: mongoVar,
    mongodbDb: env.TROUPE_MONGODB_DB || new URL(mongodbUrl.replace(/^mongodb\+srv:/, 'http:').replace(/^mongodb:/, 'http:')).pathname.slice(1) || 'troupe',
    redisUrl: redis.url,
    redisUrlVar: redis.name,
    redisTls: redisTls(env, redis.name, redisTarget.tls),
    redisCluster: redisTarget.cluster,
    redisPrefix: prefix,
    masterKeys: keys,
    masterKeyId: currentId,
    bootstrapApiKey: apiKey(env, 'TROUPE_BOOTSTRAP_API_KEY'),
    bootstrapRoutingKey: apiKey(env, 'TROUPE_BOOTSTRAP_ROUTING_KEY'),
    publicUrl: url(env, 'TROUPE_PUBLIC_URL', ['http:', 'https:'], `http://localhost:${port}`),
    routingPublicUrl: url(env, 'TROUPE_ROUTING_PUBLIC_URL', ['http:', 'https:'], `http://localhost:${routerPort}`),
    webhooksAllowPrivate: bool(env, 'TROUPE_WEBHOOKS_ALLOW_PRIVATE'),
    modelsAllowPrivate: bool(env, 'TROUPE_MODELS_ALLOW_PRIVATE'),
    privateNetworkHatches: privateNetworkHatches(env, production),
    egressAllowPrivate: bool(env, 'TROUPE_EGRESS_ALLOW_PRIVATE'),
    sweepIntervalMs: int(env, 'TROUPE_SWEEP_INTERVAL_MS', 4000, 100, 3_600_000),
    bodyIdleTimeoutMs: int(env, 'TROUPE_BODY_IDLE_TIMEOUT_MS', 30_000, 0, 3_600_000),
    routerBreaker: Object.freeze({ failures: int(env, 'ROUTER_BREAKER_FAILURES', DEFAULT_BREAKER.failures, 0, 1000), coolDownMs: int(env, 'ROUTER_BREAKER_COOLDOWN_MS', DEFAULT_BREAKER.coolDownMs, 100, 3_600_000) }),
    routerAttemptTimeoutMs: int(env, 'ROUTER_ATTEMPT_TIMEOUT_MS', 0, 0, 3_600_000),
    maxFileBytes: int(env, 'TROUPE_MAX_FILE_BYTES', 25 * 1024 * 1024, 1, 2 ** 40),
    maxBodyBytes: int(env, 'TROUPE_MAX_BODY_BYTES', 1024 * 1024, 1024, 2 ** 30),
    logLevel,
    sessionShards: int(env, 'TROUPE_SESSION_SHARDS', 64, 1, 4096),
    syncWaitMs: int(env, 'TROUPE_SYNC_WAIT_MS', 60_000, 0, 3_600_000),
    shutdownTimeoutMs: int(env, 'TROUPE_SHUTDOWN_TIMEOUT_MS', 25_000, 0, 600_000),
    // Production: long enough for a load balancer probing /readyz every second or two; local runs stop at once.
    drainDelayMs: int(env, 'TROUPE_DRAIN_DELAY_MS', production ? 3000 : 0, 0, 60_000),
    uploadTtlSeconds: int(env, 'TROUPE_UPLOAD_TTL_SECONDS', 3600, 1, 7 * 24 * 3600),
    actorLockMs: int(env, 'TROUPE_ACTOR_LOCK_MS', 4_000, 1000, 600_000),
    poisonStalls: int(env, 'TROUPE_POISON_STALLS', 3, 1, 20),
    turnBudgetMs: int(env, 'TROUPE_TURN_BUDGET_MS', 120_000, 0, 3_600_000),
    sandboxDir: sandboxDir(env),
    sandboxMemoryMb: int(env, 'TROUPE_SANDBOX_MEMORY_MB', 256, 32, 16_384),
    agentStepTimeoutMs: int(env, 'TROUPE_AGENT_STEP_TIMEOUT_MS', 30_000, 1000, 600_000),
    sandboxVersionsMaxBytes: int(env, 'TROUPE_SANDBOX_VERSIONS_MAX_BYTES', 2 * 1024 ** 3, 0, 2 ** 50),
    sandbox: sandboxConfig(env, production),
    toolRunnerConcurrency: int(env, 'TROUPE_TOOL_RUNNER_CONCURRENCY', 4, 1, 256),
    scheduleMinIntervalMs: int(env, 'TROUPE_SCHEDULE_MIN_INTERVAL_MS', 1000, 1000, 366 * 86_400_000),
    scheduleRunRetentionDays: int(env, 'TROUPE_SCHEDULE_RUN_RETENTION_DAYS', 30, 1, 36_500),
    scheduleReconcileWindowMs: int(env, 'TROUPE_SCHEDULE_RECONCILE_WINDOW_MS', 300_000, 1000, 86_400_000),
    workerBatchSlots: int(env, 'TROUPE_WORKER_BATCH_SLOTS', 16, 0, 4096),
    webhookRetrySchedule: parseRetrySchedule(env.TROUPE_WEBHOOK_RETRY_SCHEDULE, production),
    webhookTimeoutMs: int(env, 'TROUPE_WEBHOOK_TIMEOUT_MS', 15_000, 100, 120_000),
    webhookConcurrency: int(env, 'TROUPE_WEBHOOK_CONCURRENCY', 64, 1, 1024),
    webhookEndpointConcurrency: int(env, 'TROUPE_WEBHOOK_ENDPOINT_CONCURRENCY', 8, 1, 1024),
    authFailuresPerMin: int(env, 'TROUPE_AUTH_FAILURES_PER_MIN', 300, 0, 1e9),
    buffers: bufferLimits(env),
    limits: Object.freeze(Object.fromEntries(Object.entries(LIMIT_ENV).map(([k, name]) => [k, int(env, name, DEFAULT_LIMITS[k as keyof OrgLimits] ?? 0, 0, 1e9)])) as unknown as OrgLimits),
  });
}
