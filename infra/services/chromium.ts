import { spawnSync } from 'node:child_process';
import { onPath } from './process.js';

const NAMES = ['chromium', 'chromium-browser'];

function found(): string | null {
  for (const n of NAMES) {
    const p = onPath(n);
    if (p) return p;
  }
  return null;
}

/**
 * Debian's chromium for the console's browser test (driven by playwright-core,
 * which never downloads a browser of its own). Installed with apt-get when
 * missing and running as root, the way ensureRedisServer does; the package
 * index is refreshed only when a plain install fails.
 */
export function ensureChromium(log: (msg: string) => void): string {
  const existing = process.env.TROUPE_CHROMIUM || found();
  if (existing) return existing;
  if (process.getuid?.() !== 0) {
    throw new Error('chromium is not on PATH. Install it (Debian: apt-get install -y chromium) or set TROUPE_CHROMIUM to a Chromium binary.');
  }
  log('chromium not found; installing it with apt-get (one time)');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const apt = (args: string[]) => spawnSync('apt-get', args, { env, stdio: ['ignore', 'inherit', 'inherit'] }).status === 0;
  const install = ['install', '-y', '-qq', 'chromium'];
  if (!apt(install) && !(apt(['update', '-qq']) && apt(install))) throw new Error('apt-get install chromium failed');
  const installed = found();
  if (!installed) throw new Error('chromium is still missing after apt-get install');
  return installed;
}
