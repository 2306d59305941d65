import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

/** A free TCP port on loopback, chosen by the kernel. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export function onPath(cmd: string): string | null {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * `setpriv --pdeathsig` (util-linux) where there is one: the kernel sends the
 * service SIGTERM the moment the process that spawned it dies, however it
 * dies. Node cannot set PR_SET_PDEATHSIG on a child itself; setpriv sets it
 * and execs the service, which keeps it. (Linux ties it to the thread that
 * spawned: call this from the main thread.) Looked up once.
 */
let pdeathsig: string[] | undefined;
function deathSignalPrefix(): string[] {
  if (pdeathsig === undefined) {
    const bin = process.platform === 'linux' ? onPath('setpriv') : null;
    pdeathsig = bin && spawnSync(bin, ['--pdeathsig', 'SIGTERM', 'true']).status === 0 ? [bin, '--pdeathsig', 'SIGTERM'] : [];
  }
  return pdeathsig;
}

export interface ManagedProcess {
  readonly name: string;
  readonly pid: number;
  readonly child: ChildProcess;
  /** stdout+stderr so far, for error messages. */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Spawns a service that ends with this process, so a test run or a killed
 * `npm start` never leaves a server behind: on Linux the kernel signals it
 * when this process dies (a parent-death signal, set through setpriv), and a
 * watchdog also ends it if this process dies without cleaning up (SIGKILL,
 * crash), for systems without setpriv and a service that ignores SIGTERM.
 *
 * The service runs in a process group of its own (detached): a terminal's Ctrl-C signals the whole foreground
 * group, and a server that got it too would exit while the roles using it are still closing (they then log
 * connection errors for work that was fine). Only whoever started it stops it, with `stop()`, after its users
 * are done; if that process dies first (SIGKILL, a crash), the watchdog sees it within a second and ends the
 * service (SIGTERM, then SIGKILL 3 s later), so a server never outlives its launcher for long.
 */
export function startManaged(name: string, cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): ManagedProcess {
  // Through sh for umask 077: the files a service writes (MongoDB's data file, Redis's AOF) hold message text and are
  // not for other users. `exec` keeps the pid the service's own.
  const [first, ...prefix] = [...deathSignalPrefix(), 'sh', '-c', 'umask 077 && exec "$0" "$@"', cmd, ...args];
  const child = spawn(first, prefix, {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  const keep = (b: Buffer) => {
    out = (out + b.toString()).slice(-8000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  child.on('error', (err) => keep(Buffer.from(`spawn error: ${err.message}\n`)));
  const pid = child.pid ?? -1;
  const watchdog = spawn(
    'sh',
    ['-c', `while kill -0 ${process.pid} 2>/dev/null && kill -0 ${pid} 2>/dev/null; do sleep 1; done; kill -TERM ${pid} 2>/dev/null; sleep 3; kill -KILL ${pid} 2>/dev/null; true`],
    { detached: true, stdio: 'ignore' },
  );
  watchdog.unref();
  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= new Promise<void>((resolve) => {
      // Declared first: `done` also runs at once when the child has already exited.
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        clearTimeout(timer);
        try {
          if (watchdog.pid) process.kill(watchdog.pid, 'SIGKILL');
        } catch {
          /* already gone */
        }
        resolve();
      };
      if (child.exitCode !== null || child.signalCode !== null) return done();
      timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      child.once('exit', done);
      child.kill('SIGTERM');
    }));
  return { name, pid, child, output: () => out, stop };
}

/** Resolves when `check` succeeds, rejects with the service's output when it exits or times out. */
export async function waitUntil(proc: ManagedProcess, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null) throw new Error(`${proc.name} exited with code ${proc.child.exitCode}:\n${proc.output()}`);
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  await proc.stop();
  throw new Error(`${proc.name} did not become ready within ${timeoutMs} ms:\n${proc.output()}`);
}
