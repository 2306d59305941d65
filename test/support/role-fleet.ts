import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { freePort } from '../../infra/services/process.js';

export interface RoleProcess {
  role: string;
  child: ChildProcess;
  /** Base URL of a web process. */
  url?: string;
  output(): string;
}

/** Starts one role as its own OS process (test/support/role-process.ts); resolves once it serves. */
export async function startRoleProcess(role: string, env: Record<string, string>, readyMs = 60_000): Promise<RoleProcess> {
  const port = role === 'web' ? await freePort() : 0;
  const child = spawn(process.execPath, [join(__dirname, 'role-process.js'), role], {
    env: { ...process.env, ...env, ...(port ? { PORT: String(port), TROUPE_PUBLIC_URL: `http://127.0.0.1:${port}` } : {}) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4000)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${role} process not ready in ${readyMs} ms: ${out}`)), readyMs);
    child.stdout!.on('data', (d: Buffer) => {
      out = (out + d.toString()).slice(-4000);
      if (/^ready \d+$/m.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${role} process exited ${code}: ${out}`));
    });
  });
  return { role, child, url: port ? `http://127.0.0.1:${port}` : undefined, output: () => out };
}

/** SIGTERM every process (each drains and closes in order), SIGKILL what is left after `ms`. */
export async function stopRoleProcesses(procs: RoleProcess[], ms = 10_000): Promise<void> {
  await Promise.all(
    procs.map(
      ({ child }) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          const timer = setTimeout(() => child.kill('SIGKILL'), ms);
          child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
}
