import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const RUNSC = '/usr/bin/runsc';

/**
 * Debian's runsc (gVisor), the opt-in TROUPE_SANDBOX=runsc tier
 * (src/lib/sandbox/runsc.ts). Installed like bubblewrap (bubblewrap.ts) so that
 * test/integration/sandbox-runsc.test.ts fails, not skips, without it.
 */
export function ensureRunsc(log: (msg: string) => void): string {
  if (existsSync(RUNSC)) return RUNSC;
  if (process.getuid?.() !== 0) throw new Error(`${RUNSC} is missing. Install it (Debian: apt-get install -y runsc); the gVisor sandbox tests need it.`);
  log('runsc not found; installing it with apt-get (one time)');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const apt = (args: string[]) => spawnSync('apt-get', args, { env, stdio: ['ignore', 'inherit', 'inherit'] }).status === 0;
  const install = ['install', '-y', '-qq', 'runsc'];
  if (!apt(install) && !(apt(['update', '-qq']) && apt(install))) throw new Error('apt-get install runsc failed');
  if (!existsSync(RUNSC)) throw new Error('runsc is still missing after apt-get install');
  return RUNSC;
}
