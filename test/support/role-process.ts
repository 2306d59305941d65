import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const MAIN = join(__dirname, '../../src/main.js');

/** A Troupe role in its own OS process, started with the real entry point, as a dyno would be. */
export interface RoleProcess {
  child: ChildProcess;
  ports: { web?: number; router?: number };
  /** Every stdout/stderr line so far (pino JSON). */
  lines: string[];
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
  /** Resolves with the first log line whose msg is `msg` (bounded by `ms`). */
  waitForLog(msg: string, ms?: number): Promise<Record<string, unknown>>;
  kill(signal?: NodeJS.Signals): void;
}

export interface RoleProcessOptions {
  /** How long each role may take to log that it is up. */
  readyMs?: number;
  /** Another entry script that starts the roles the same way (a fault-injecting one, test/support/worker-process.ts). */
  entry?: string;
}

/** Starts `node dist/src/main.js <roles>` (or `entry`) and waits until each role has logged that it is up. */
export async function startRoleProcess(roles: string[], env: Record<string, string>, { readyMs = 20_000, entry = MAIN }: RoleProcessOptions = {}): Promise<RoleProcess> {
  const child = spawn(process.execPath, [entry, ...roles], { env: { ...process.env, LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const watchers: { msg: string; resolve: (l: Record<string, unknown>) => void }[] = [];
  const onLine = (line: string) => {
    lines.push(line);
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(line);
    } catch {
      return;
    }
    for (const w of watchers.filter((x) => x.msg === parsed.msg)) {
      watchers.splice(watchers.indexOf(w), 1);
      w.resolve(parsed);
    }
  };
  for (const stream of [child.stdout!, child.stderr!]) {
    let buf = '';
    stream.on('data', (chunk: Buffer) => {
      buf += chunk.toString();
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        onLine(buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
    });
  }
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const waitForLog = (msg: string, ms = readyMs) => {
    const seen = lines.map((l) => { try { return JSON.parse(l); } catch { return null; } }).find((p) => p?.msg === msg);
    if (seen) return Promise.resolve(seen as Record<string, unknown>);
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no "${msg}" log line within ${ms} ms; output:\n${lines.join('\n').slice(-3000)}`)), ms);
      watchers.push({ msg, resolve: (l) => (clearTimeout(timer), resolve(l)) });
      void exited.then((code) => reject(new Error(`process exited (${code}) before "${msg}"; output:\n${lines.join('\n').slice(-3000)}`)));
    });
  };
  const ports: RoleProcess['ports'] = {};
  try {
    if (roles.includes('web') || roles.includes('all')) ports.web = (await waitForLog('web listening')).port as number;
    if (roles.includes('router') || roles.includes('all')) ports.router = (await waitForLog('router listening')).port as number;
    if (roles.includes('worker') || roles.includes('all')) await waitForLog('worker started');
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return { child, ports, lines, exited, waitForLog, kill: (signal = 'SIGTERM') => void child.kill(signal) };
}
