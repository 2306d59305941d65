import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { freePort, onPath, startManaged, waitUntil, type ManagedProcess } from './process.js';

/** Finds redis-server, installing Debian's package when we are root and it is missing. */
export function ensureRedisServer(log: (msg: string) => void): string {
  const found = onPath('redis-server');
  if (found) return found;
  if (process.getuid?.() !== 0) {
    throw new Error('redis-server is not on PATH. Install it (Debian: apt-get install -y redis-server) or set REDIS_URL.');
  }
  log('redis-server not found; installing it with apt-get (one time)');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [['update', '-qq'], ['install', '-y', '-qq', 'redis-server']]) {
    const r = spawnSync('apt-get', args, { env, stdio: ['ignore', 'inherit', 'inherit'] });
    if (r.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed with code ${r.status}`);
  }
  const installed = onPath('redis-server');
  if (!installed) throw new Error('redis-server is still missing after apt-get install');
  return installed;
}

function pingRedis(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1');
    let buf = '';
    sock.setTimeout(500, () => {
      sock.destroy();
      resolve(false);
    });
    sock.on('error', () => resolve(false));
    sock.on('connect', () => sock.write('PING\r\n'));
    sock.on('data', (d) => {
      buf += d.toString();
      if (buf.includes('\r\n')) {
        sock.destroy();
        resolve(buf.startsWith('+PONG'));
      }
    });
  });
}

export interface RedisOptions {
  /**
   * Keep data across restarts with an append-only file (fsync every second).
   * `npm start` does, so a restart of Redis does not drop queued work; test
   * runs do not unless a test asks, as their data is thrown away anyway.
   */
  persistent?: boolean;
  /** A given port (a fault test restarting Redis in place); a free one otherwise. */
  port?: number;
}

/** redis-server's command line for one data directory. */
export function redisArgs(port: number, dataDir: string, persistent: boolean): string[] {
  return [
    '--port', String(port),
    '--bind', '127.0.0.1',
    '--dir', dataDir,
    '--save', '',
    ...(persistent ? ['--appendonly', 'yes', '--appendfsync', 'everysec'] : ['--appendonly', 'no']),
    '--daemonize', 'no',
    '--loglevel', 'warning',
  ];
}

export async function startRedis(dataDir: string, log: (msg: string) => void, opts: RedisOptions = {}): Promise<{ url: string; proc: ManagedProcess }> {
  const bin = ensureRedisServer(log);
  mkdirSync(dataDir, { recursive: true });
  const port = opts.port ?? (await freePort());
  const proc = startManaged('redis-server', bin, redisArgs(port, dataDir, opts.persistent === true));
  await waitUntil(proc, () => pingRedis(port), 15_000);
  return { url: `redis://127.0.0.1:${port}`, proc };
}
