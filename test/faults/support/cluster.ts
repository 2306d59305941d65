import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { MongoClient, type Db } from 'mongodb';
import { startMongoWire, type MongoKind } from '../../../infra/services/mongo-wire.js';
import { freePort, type ManagedProcess } from '../../../infra/services/process.js';
import { startRedis } from '../../../infra/services/redis-server.js';
import type { Role } from '../../../src/roles/start.js';

const MAIN = resolve(__dirname, '../../../src/main.js');
const quiet = () => undefined;

export interface ClusterOptions {
  /** Redis with an append-only file (data survives a restart). */
  aof?: boolean;
  /** A MongoDB-wire server of the cluster's own (to restart it); else the suite's shared one. */
  ownMongo?: boolean;
  /** Which server that own one is (the launcher's default otherwise). */
  mongoKind?: MongoKind;
  env?: Record<string, string>;
}

/** One Troupe role in its own OS process: `node dist/src/main.js <role>`, as a dyno runs it. */
export interface RoleProcess {
  name: string;
  role: Role;
  child: ChildProcess;
  port?: number;
  url?: string;
  /** Every line it wrote (pino JSON on stdout, anything on stderr). */
  lines: string[];
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', () => r()));
}

/**
 * A Troupe deployment on loopback for fault tests: its own redis-server (so
 * it can be restarted on the same port and data), a MongoDB-wire server, and
 * roles as separate processes that the test starts, kills and restarts.
 * Servers come from the launcher (infra/services), so the suite follows
 * whatever MongoDB-wire server it defaults to.
 */
export class Cluster {
  readonly procs = new Map<string, RoleProcess>();
  /** Lines of processes that have exited, kept for scans and failure reports. */
  readonly pastLines: string[] = [];
  readonly apiKey = `tr_sk_fault_${randomBytes(16).toString('hex')}`;
  readonly routingKey = `tr_rk_fault_${randomBytes(16).toString('hex')}`;
  readonly dbName = `troupe_fault_${randomBytes(5).toString('hex')}`;
  env: Record<string, string> = {};
  redis!: ManagedProcess;
  mongoProc: ManagedProcess | null = null;
  mongoUrl = '';
  /** The MongoDB-wire server's kind, when the cluster has its own. */
  mongoKind = 'shared';
  private redisPort = 0;
  private mongoPort = 0;
  private readonly dir = mkdtempSync(join(tmpdir(), 'troupe-fault-'));
  private client: MongoClient | null = null;
  private readonly onExit = () => this.killAll();

  private constructor(readonly opts: ClusterOptions) {}

  static async start(opts: ClusterOptions = {}): Promise<Cluster> {
    const c = new Cluster(opts);
    process.on('exit', c.onExit);
    c.redisPort = await freePort();
    c.redis = (await startRedis(join(c.dir, 'redis'), quiet, { persistent: opts.aof === true, port: c.redisPort })).proc;
    if (opts.ownMongo) {
      c.mongoPort = await freePort();
      const m = await startMongoWire(join(c.dir, 'mongo'), quiet, { port: c.mongoPort, kind: opts.mongoKind });
      c.mongoProc = m.proc;
      c.mongoUrl = m.url;
      c.mongoKind = m.kind;
    } else {
      const shared = process.env.MONGODB_URL;
      if (!shared) throw new Error('MONGODB_URL is not set; run the fault suite through "npm run test:faults"');
      c.mongoUrl = shared;
    }
    c.env = {
      ...(process.env as Record<string, string>),
      REDIS_URL: `redis://127.0.0.1:${c.redisPort}`,
      MONGODB_URL: c.mongoUrl,
      TROUPE_MONGODB_DB: c.dbName,
      TROUPE_REDIS_PREFIX: 'tf',
      TROUPE_BOOTSTRAP_API_KEY: c.apiKey,
      TROUPE_BOOTSTRAP_ROUTING_KEY: c.routingKey,
      TROUPE_SESSION_SHARDS: '4',
      TROUPE_ACTOR_LOCK_MS: '2000',
      TROUPE_SWEEP_INTERVAL_MS: '1000',
      TROUPE_SHUTDOWN_TIMEOUT_MS: '3000',
      TROUPE_WEBHOOKS_ALLOW_PRIVATE: '1',
      TROUPE_MODELS_ALLOW_PRIVATE: '1',
      LOG_LEVEL: 'info',
      ...opts.env,
    };
    return c;
  }

  /** Starts a role process and resolves once it has logged its start line. */
  async start(name: string, role: Role, env: Record<string, string> = {}): Promise<RoleProcess> {
    const port = role === 'web' || role === 'router' ? await freePort() : undefined;
    const portEnv = role === 'web' ? { PORT: String(port), TROUPE_PUBLIC_URL: `http://127.0.0.1:${port}` } : role === 'router' ? { ROUTER_PORT: String(port) } : {};
    const child = spawn(process.execPath, [MAIN, role], { env: { ...this.env, ...portEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const p: RoleProcess = { name, role, child, port, url: port ? `http://127.0.0.1:${port}` : undefined, lines: [] };
    this.procs.set(name, p);
    const ready = new Promise<void>((res, rej) => {
      let buf = '';
      const onData = (d: Buffer) => {
        buf += d.toString();
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          p.lines.push(line);
          if (line.includes(`"role":"${role}"`)) res();
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', (code, sig) => rej(new Error(`${name} exited (${code ?? sig}) before it was ready:\n${p.lines.slice(-20).join('\n')}`)));
    });
    const timer = new Promise<never>((_, rej) => setTimeout(() => rej(new Error(`${name} did not start in 30 s:\n${p.lines.slice(-20).join('\n')}`)), 30_000).unref());
    await Promise.race([ready, timer]);
    return p;
  }

  /** Sends a signal to a role process and waits for it to exit; its log lines are kept. */
  async kill(name: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const p = this.procs.get(name);
    if (!p) return;
    p.child.kill(signal);
    await exited(p.child);
    this.pastLines.push(...p.lines);
    this.procs.delete(name);
  }

  url(name: string): string {
    const u = this.procs.get(name)?.url;
    if (!u) throw new Error(`${name} is not a running web or router process`);
    return u;
  }

  /** Live web processes' base URLs, in start order. */
  webUrls(): string[] {
    return [...this.procs.values()].filter((p) => p.role === 'web').map((p) => p.url!);
  }

  /** Stops redis-server with `signal`, keeps it down `downMs`, starts it again on the same port and data; returns when it answers. */
  async restartRedis(signal: NodeJS.Signals, downMs: number): Promise<number> {
    this.redis.child.kill(signal);
    await exited(this.redis.child);
    await this.redis.stop();
    await new Promise((r) => setTimeout(r, downMs));
    this.redis = (await startRedis(join(this.dir, 'redis'), quiet, { persistent: this.opts.aof === true, port: this.redisPort })).proc;
    return Date.now();
  }

  /** Stops redis-server for good (an outage that outlasts the test). */
  async stopRedis(): Promise<void> {
    this.redis.child.kill('SIGKILL');
    await exited(this.redis.child);
    await this.redis.stop();
  }

  /** The same for the cluster's own MongoDB-wire server. */
  async restartMongo(signal: NodeJS.Signals, downMs: number): Promise<number> {
    if (!this.mongoProc) throw new Error('the cluster uses the shared MongoDB-wire server');
    this.mongoProc.child.kill(signal);
    await exited(this.mongoProc.child);
    await this.mongoProc.stop();
    await new Promise((r) => setTimeout(r, downMs));
    this.mongoProc = (await startMongoWire(join(this.dir, 'mongo'), quiet, { port: this.mongoPort, kind: this.opts.mongoKind })).proc;
    return Date.now();
  }

  async db(): Promise<Db> {
    this.client ??= await new MongoClient(this.mongoUrl, { directConnection: true, serverSelectionTimeoutMS: 20_000 }).connect();
    return this.client.db(this.dbName);
  }

  /** Every log line any role process wrote, past and present. */
  logLines(): string[] {
    return [...this.pastLines, ...[...this.procs.values()].flatMap((p) => p.lines)];
  }

  private killAll(): void {
    for (const p of this.procs.values()) p.child.kill('SIGKILL');
  }

  async close(): Promise<void> {
    await Promise.all([...this.procs.keys()].map((n) => this.kill(n, 'SIGKILL')));
    // Every role's log, kept for reading after a failure (.data/ is ignored by git).
    const logs = resolve(__dirname, '../../../../.data/faults/logs');
    mkdirSync(logs, { recursive: true });
    writeFileSync(join(logs, `${this.dbName}.log`), this.logLines().join('\n'));
    process.off('exit', this.onExit);
    if (this.client) {
      if (!this.opts.ownMongo) await this.client.db(this.dbName).dropDatabase().catch(() => undefined);
      await this.client.close();
    }
    await this.redis.stop();
    await this.mongoProc?.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
