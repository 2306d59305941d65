import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMongoWire, type MongoKind } from './mongo-wire.js';
import { makePrivate } from './private-dir.js';
import type { ManagedProcess } from './process.js';
import { startRedis, startRedisCluster } from './redis-server.js';

export interface LocalServices {
  redisUrl: string;
  mongodbUrl: string;
  /** Processes this launcher started (empty for services given by URL). */
  processes: ManagedProcess[];
  mongoKind: string;
  stop(): Promise<void>;
}

export interface LocalServicesOptions {
  /** Keep data here across runs; default is a throwaway temporary directory. */
  dataDir?: string;
  redisUrl?: string;
  /** What to start when no redisUrl is given: one server, or a 3-master Redis Cluster. Default: TROUPE_LOCAL_REDIS, else single. */
  redis?: 'single' | 'cluster';
  mongodbUrl?: string;
  /** Which local MongoDB-wire server to start; default: `localMongoKind()`. */
  mongoKind?: MongoKind;
  /** mongo-java-server only: its memory backend instead of the H2 file. */
  mongoMemory?: boolean;
  log?: (msg: string) => void;
}

export function localRedisKind(given?: 'single' | 'cluster'): 'single' | 'cluster' {
  const kind = given ?? (process.env.TROUPE_LOCAL_REDIS || 'single');
  if (kind !== 'single' && kind !== 'cluster') throw new Error(`TROUPE_LOCAL_REDIS must be single or cluster, got ${JSON.stringify(kind)}`);
  return kind;
}

/**
 * Starts whatever is not given by URL: redis-server and a MongoDB-wire server
 * on free ports, with data under one directory. `stop()` ends both and removes
 * a throwaway directory; it is idempotent. The servers do not get the terminal's Ctrl-C (startManaged): the
 * caller stops them once it is done with them, and an exit without stop() ends them too.
 */
export async function startLocalServices(opts: LocalServicesOptions = {}): Promise<LocalServices> {
  const log = opts.log ?? ((m: string) => process.stderr.write(`[services] ${m}\n`));
  const throwaway = !opts.dataDir;
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'troupe-'));
  // Kept data is message text: the folder is the owner's alone, also one made before this rule (the servers' umask covers new files).
  if (!throwaway) makePrivate(dataDir);
  const processes: ManagedProcess[] = [];
  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      process.off('exit', onExit);
      await Promise.all(processes.map((p) => p.stop()));
      if (throwaway) rmSync(dataDir, { recursive: true, force: true });
    })());
  // An exit without stop() (a crash, process.exit elsewhere): SIGTERM lets Redis write its AOF and the MongoDB-wire
  // server close its file; the watchdogs follow up with SIGKILL if one hangs (startManaged).
  const onExit = () => {
    for (const p of processes) p.child.kill('SIGTERM');
    if (throwaway) rmSync(dataDir, { recursive: true, force: true });
  };
  process.on('exit', onExit);
  try {
    let redisUrl = opts.redisUrl;
    if (!redisUrl && localRedisKind(opts.redis) === 'cluster') {
      const c = await startRedisCluster(join(dataDir, 'redis-cluster'), log);
      processes.push(...c.procs);
      redisUrl = c.url;
    } else if (!redisUrl) {
      // Kept data (npm start) is kept in Redis too: queued work survives a restart of redis-server.
      const r = await startRedis(join(dataDir, 'redis'), log, { persistent: !throwaway });
      processes.push(r.proc);
      redisUrl = r.url;
    }
    let mongodbUrl = opts.mongodbUrl;
    let mongoKind = 'external';
    if (!mongodbUrl) {
      const m = await startMongoWire(join(dataDir, 'mongo'), log, { kind: opts.mongoKind, memory: opts.mongoMemory });
      processes.push(m.proc);
      mongodbUrl = m.url;
      mongoKind = m.kind;
    }
    return { redisUrl, mongodbUrl, processes, mongoKind, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
