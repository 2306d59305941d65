import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
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
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const port = opts.port ?? (await freePort());
  const proc = startManaged('redis-server', bin, redisArgs(port, dataDir, opts.persistent === true));
  await waitUntil(proc, () => pingRedis(port), 15_000);
  return { url: `redis://127.0.0.1:${port}`, proc };
}

function redisCli(args: string[]): { ok: boolean; out: string } {
  const cli = onPath('redis-cli');
  if (!cli) throw new Error('redis-cli is not on PATH (Debian ships it with redis-server, or in redis-tools)');
  const r = spawnSync(cli, args, { encoding: 'utf8', timeout: 30_000 });
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

/**
 * A local Redis Cluster of `masters` masters (no replicas) on free ports:
 * one `redis-server --cluster-enabled yes` per master, joined with
 * `redis-cli --cluster create`. Ready once every node reports
 * `cluster_state:ok`. The URL lists every node as a seed.
 */
export async function startRedisCluster(
  dataDir: string,
  log: (msg: string) => void,
  masters = 3,
): Promise<{ url: string; procs: ManagedProcess[] }> {
  const bin = ensureRedisServer(log);
  const procs: ManagedProcess[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < masters; i++) {
      // The cluster bus gets a free port of its own: the default (port + 10000) may be taken or out of range.
      const [port, busPort] = [await freePort(), await freePort()];
      const dir = join(dataDir, `node-${port}`);
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      procs.push(
        startManaged(`redis-cluster-${port}`, bin, [
          '--port', String(port),
          '--cluster-port', String(busPort),
          '--bind', '127.0.0.1',
          '--dir', dir,
          '--cluster-enabled', 'yes',
          '--cluster-config-file', join(dir, 'nodes.conf'),
          '--cluster-node-timeout', '5000',
          '--save', '',
          '--appendonly', 'no',
          '--daemonize', 'no',
          '--loglevel', 'warning',
        ]),
      );
      ports.push(port);
    }
    for (const [i, port] of ports.entries()) await waitUntil(procs[i], () => pingRedis(port), 15_000);
    const created = redisCli(['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes']);
    if (!created.ok) throw new Error(`redis-cli --cluster create failed:\n${created.out}`);
    const clusterOk = async () => ports.every((p) => /cluster_state:ok/.test(redisCli(['-p', String(p), 'cluster', 'info']).out));
    await waitUntil(procs[0], clusterOk, 20_000);
    return { url: `redis-cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`, procs };
  } catch (err) {
    await Promise.all(procs.map((p) => p.stop()));
    throw err;
  }
}
