import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const BWRAP = '/usr/bin/bwrap';

/**
 * Debian's bubblewrap, the sandbox every tool call runs in (src/lib/sandbox/bwrap.ts).
 * Installed with apt-get when missing and running as root, the way
 * ensureRedisServer does; the package index is refreshed only when a plain
 * install fails. Not root and missing: a clear error, since the tool tests
 * must fail rather than run without the sandbox.
 */
export function ensureBubblewrap(log: (msg: string) => void): string {
  if (existsSync(BWRAP)) return BWRAP;
  if (process.getuid?.() !== 0) throw new Error(`${BWRAP} is missing. Install it (Debian: apt-get install -y bubblewrap); tools run inside it.`);
  log('bubblewrap not found; installing it with apt-get (one time)');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const apt = (args: string[]) => spawnSync('apt-get', args, { env, stdio: ['ignore', 'inherit', 'inherit'] }).status === 0;
  const install = ['install', '-y', '-qq', 'bubblewrap'];
  if (!apt(install) && !(apt(['update', '-qq']) && apt(install))) throw new Error('apt-get install bubblewrap failed');
  if (!existsSync(BWRAP)) throw new Error('bubblewrap is still missing after apt-get install');
  return BWRAP;
}
