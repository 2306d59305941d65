import { spawn } from 'node:child_process';
import { join } from 'node:path';

/** The built `troupe` CLI. */
export const CLI = join(__dirname, '../../..', 'dist/clients/cli/main.js');

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * `troupe …` as a child process, the way a user or a script runs it: with only PATH, HOME (the test's own folder,
 * so no real profile is read) and what the test sets in its environment.
 */
export function troupe(args: string[], env: Record<string, string>, cwd: string, timeoutMs = 40_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, env: { PATH: process.env.PATH ?? '', HOME: cwd, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`troupe ${args.join(' ')} did not exit within ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}
