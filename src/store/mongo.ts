import { MongoClient, type Db, type MongoClientOptions } from 'mongodb';
import { within } from '../domain/deadline.js';
import type { Closeable } from '../domain/closeable.js';
import { installDriverFix } from './driver-fix.js';
import { liveDb } from './live-db.js';
import { MongoWatchdog } from './mongo-watchdog.js';

export interface MongoHandle extends Closeable {
  /** The current client: the watchdog may replace it (mongo-watchdog.ts), so read it when used, never keep it. */
  readonly client: MongoClient;
  /** Always the current client's database (live-db.ts): what repositories are built on. */
  db: Db;
  /** Connected to a sharded cluster's mongos: stores then name shard keys in their filters (shard-keys.ts). */
  sharded: boolean;
  /** Whether the driver fix (driver-fix.ts) is in place: false when driver internals changed, or opted out of. */
  driverFixed: boolean;
  /** Calls `fn` with the current client now and with every replacement (event listeners that must follow it). */
  onClient(fn: (client: MongoClient) => void): void;
  /** Whether the server answered a heartbeat within UNANSWERED_MS: false while it is unreachable (down, or cut off by a partition). */
  answering(now?: number): boolean;
}

export interface ConnectOptions {
  monitorCommands?: boolean;
  /**
   * Installs the driver fix for writes to closed sockets (driver-fix.ts) before connecting, default true.
   * false only for the fault test that shows what the watchdog does for a client without it.
   */
  driverFix?: boolean;
  /** Told after the watchdog replaced a wedged client (the caller logs and counts it). */
  onReplaced?: (reason: string) => void;
  /** Told when a replacement was due but could not be made (the new client did not connect). */
  onReplaceFailed?: (err: Error) => void;
}

const CONNECT_TIMEOUT_MS = 5000;
/**
 * A polled hello every 2 s, not the driver's 10 s: with the server Unknown and
 * no operation waiting on server selection, nothing asks for an early check,
 * and the next hello after the server is back could be 10 s away.
 */
const HEARTBEAT_FREQUENCY_MS = 2000;
/**
 * A server that answered no heartbeat for this long is unreachable: a polled
 * hello comes every HEARTBEAT_FREQUENCY_MS and fails by CONNECT_TIMEOUT_MS,
 * so one blip or a restart of a second or two never reaches it, and a
 * partition (whose hellos time out) does within about 8 s.
 */
export const UNANSWERED_MS = HEARTBEAT_FREQUENCY_MS + CONNECT_TIMEOUT_MS + 1000;

export async function connectMongo(url: string, dbName: string, appName = 'troupe', opts: ConnectOptions = {}): Promise<MongoHandle> {
  // Process-wide (it patches the driver's Connection class), so every client of the process has it, probes included.
  const driverFixed = opts.driverFix !== false && installDriverFix();
  const options = clientOptions(appName, opts.monitorCommands ?? false);
  const owner = new MongoOwner(url, dbName, options, opts, driverFixed);
  await owner.open();
  return owner;
}

/**
 * Owns the process's MongoClient and replaces it, atomically for every user,
 * when its watchdog finds it wedged. The old client is closed once the
 * operations it still runs have had their server selection time to end.
 */
class MongoOwner implements MongoHandle {
  readonly name = 'mongo';
  sharded = false;
  db!: Db;
  private current!: MongoClient;
  private currentDb!: Db;
  private readonly listeners: ((client: MongoClient) => void)[] = [];
  private readonly retiring = new Map<MongoClient, NodeJS.Timeout>();
  private readonly watchdog: MongoWatchdog;
  private closing: Promise<void> | null = null;
  /** When a heartbeat of the current client last succeeded (the connect counts as one). */
  private lastAnswer = Date.now();
  private readonly onAnswer = () => {
    this.lastAnswer = Date.now();
  };

  constructor(
    private readonly url: string,
    private readonly dbName: string,
    private readonly options: MongoClientOptions,
    private readonly opts: ConnectOptions,
    readonly driverFixed: boolean,
  ) {
    this.watchdog = new MongoWatchdog({
      connectTimeoutMS: CONNECT_TIMEOUT_MS,
      heartbeatFrequencyMS: HEARTBEAT_FREQUENCY_MS,
      probe: () => this.probe(),
      replace: (reason) => this.replace(reason),
    });
  }

  get client(): MongoClient {
    return this.current;
  }

  async open(): Promise<void> {
    const client = new MongoClient(this.url, this.options);
    this.watchdog.attach(client);
    try {
      await client.connect();
    } catch (err) {
      this.watchdog.stop();
      throw err;
    }
    this.use(client);
    this.db = liveDb(() => this.currentDb);
    this.sharded = await isMongos(client);
  }

  onClient(fn: (client: MongoClient) => void): void {
    this.listeners.push(fn);
    fn(this.current);
  }

  answering(now = Date.now()): boolean {
    return now - this.lastAnswer <= UNANSWERED_MS;
  }

  private use(client: MongoClient): void {
    this.current?.off('serverHeartbeatSucceeded', this.onAnswer);
    client.on('serverHeartbeatSucceeded', this.onAnswer);
    this.lastAnswer = Date.now();
    this.current = client;
    this.currentDb = client.db(this.dbName);
    for (const fn of this.listeners) fn(client);
  }

  /** A short-lived client of its own: does the server answer a fresh connection now? */
  private async probe(): Promise<boolean> {
    const probe = new MongoClient(this.url, { ...this.options, appName: `${this.options.appName}-probe`, maxPoolSize: 1, serverSelectionTimeoutMS: CONNECT_TIMEOUT_MS });
    try {
      const answered = probe.connect().then((c) => c.db('admin').command({ ping: 1 })).then(() => true, () => false);
      return await within(answered, 2 * CONNECT_TIMEOUT_MS, () => false);
    } finally {
      void probe.close().catch(() => undefined);
    }
  }

  private async replace(reason: string): Promise<void> {
    if (this.closing) return;
    const next = new MongoClient(this.url, this.options);
    try {
      await next.connect();
    } catch (err) {
      void next.close().catch(() => undefined);
      this.opts.onReplaceFailed?.(err as Error);
      return;
    }
    if (this.closing) return void next.close().catch(() => undefined);
    const old = this.current;
    this.watchdog.attach(next);
    this.use(next);
    this.opts.onReplaced?.(reason);
    this.retire(old);
  }

  /** Operations already running on the old client keep it until their server selection would have timed out. */
  private retire(old: MongoClient): void {
    const grace = (this.options.serverSelectionTimeoutMS ?? 5000) + 1000;
    const timer = setTimeout(() => {
      this.retiring.delete(old);
      void old.close().catch(() => undefined);
    }, grace);
    timer.unref();
    this.retiring.set(old, timer);
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.watchdog.stop();
      for (const timer of this.retiring.values()) clearTimeout(timer);
      const clients = [this.current, ...this.retiring.keys()];
      this.retiring.clear();
      await Promise.all(clients.map((c) => c.close()));
    })();
    return this.closing;
  }
}

/**
 * The options of every client of the process. The topology is the URL's:
 * `directConnection` is never set here (an option object beats the URL). With
 * it unset the driver discovers what one seed is: a lone mongod, FerretDB or
 * mongo-java-server becomes a single server, a replica-set member leads to the
 * whole set (so a failover is followed), a seed list or an SRV record is
 * discovered, and `loadBalanced=true` is accepted (the driver refuses it
 * beside any `directConnection`). `?directConnection=true` still forces a
 * direct connection where an operator wants one.
 */
export function clientOptions(appName: string, monitorCommands = false): MongoClientOptions {
  return {
    appName,
    serverSelectionTimeoutMS: 5000,
    connectTimeoutMS: CONNECT_TIMEOUT_MS,
    heartbeatFrequencyMS: HEARTBEAT_FREQUENCY_MS,
    maxPoolSize: 50,
    // Every read must see the writes before it (a turn reads the session another process just saved, a
    // client reads the message it was just told about): a URL's secondary read preference is overridden.
    readPreference: 'primary',
    // An acknowledged write is on disk: MongoDB acknowledges a w:1 write before its journal is flushed (up to
    // 100 ms later) unless j is asked for; `w` stays the server's default (majority on a replica set).
    // docs/decisions.md "Durable writes on every store".
    writeConcern: { journal: true },
    // Only for the benchmarks' round-trip counts: every command then emits an event.
    monitorCommands,
    // Polling, not the streaming hello: mongo-java-server has no awaitable hello, and a polled hello is
    // bounded by connectTimeoutMS, which is what lets the watchdog tell a wedged monitor from a slow one.
    serverMonitoringMode: 'poll',
  };
}

/**
 * mongos answers `hello` with `msg: "isdbgrid"`; mongod, FerretDB and
 * mongo-java-server do not. mongo-java-server knows only the legacy name.
 */
async function isMongos(client: MongoClient): Promise<boolean> {
  const admin = client.db('admin');
  const hello = await admin.command({ hello: 1 }).catch(() => admin.command({ isMaster: 1 }));
  return hello.msg === 'isdbgrid';
}
