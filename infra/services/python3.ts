import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { onPath } from './process.js';

const DEBIAN_PYTHON = '/usr/bin/python3';

/**
 * python3 for Python custom tools, installed with apt-get when missing and
 * running as root, the way ensureRedisServer does. As root, tools run as
 * nobody, who cannot use an interpreter under /root (pyenv's), so only
 * Debian's counts then; the sandbox finds the one to use itself
 * (src/lib/sandbox/python.ts).
 */
export function ensurePython3(log: (msg: string) => void): string {
  const isRoot = process.getuid?.() === 0;
  if (existsSync(DEBIAN_PYTHON)) return DEBIAN_PYTHON;
  const found = onPath('python3');
  if (found && !isRoot) return found;
  if (!isRoot) throw new Error('python3 is not on PATH. Install it (Debian: apt-get install -y python3) to run Python tools.');
  log('python3 not found where the sandbox user can run it; installing it with apt-get (one time)');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const apt = (args: string[]) => spawnSync('apt-get', args, { env, stdio: ['ignore', 'inherit', 'inherit'] }).status === 0;
  const install = ['install', '-y', '-qq', '--no-install-recommends', 'python3'];
  if (!apt(install) && !(apt(['update', '-qq']) && apt(install))) throw new Error('apt-get install python3 failed');
  if (!existsSync(DEBIAN_PYTHON)) throw new Error('python3 is still missing after apt-get install');
  return DEBIAN_PYTHON;
}
