import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The version the fuzz tests' figures and expectations are taken with (test/integration/fuzz.test.ts). */
export const SCHEMATHESIS_VERSION = '4.32.5';
const VENV = resolve(__dirname, '../../../.data/schemathesis');
export const SCHEMATHESIS_BIN = join(VENV, 'bin', 'st');

/**
 * schemathesis from PyPI in a venv under .data/, installed on first use: `npm test` calls this before the
 * integration legs, and the fuzz test again (a run of that file alone). Debian's python3 has no `venv`
 * module without python3-venv, which is installed with apt-get when missing and running as root (as
 * ensureRedisServer does). Throws, with the reason, when it cannot: the fuzz test then fails, it does not skip.
 */
export function ensureSchemathesis(log: (msg: string) => void = () => undefined): string {
  const ready = () => existsSync(SCHEMATHESIS_BIN) && spawnSync(SCHEMATHESIS_BIN, ['--version'], { encoding: 'utf8' }).stdout?.includes(SCHEMATHESIS_VERSION);
  if (ready()) return SCHEMATHESIS_BIN;
  const python = ['python3', 'python'].find((p) => spawnSync(p, ['--version']).status === 0);
  if (!python) throw new Error('schemathesis needs python3 on PATH (Debian: apt-get install -y python3 python3-venv)');
  const hasVenv = () => spawnSync(python, ['-c', 'import venv, ensurepip'], { stdio: 'ignore' }).status === 0;
  if (!hasVenv()) {
    if (process.getuid?.() !== 0) throw new Error(`schemathesis needs ${python} with its venv module (Debian: apt-get install -y python3-venv)`);
    log('python3-venv not found; installing it with apt-get (one time)');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const apt = (args: string[]) => spawnSync('apt-get', args, { env, stdio: ['ignore', 'inherit', 'inherit'] }).status === 0;
    const install = ['install', '-y', '-qq', '--no-install-recommends', 'python3-venv'];
    if (!apt(install) && !(apt(['update', '-qq']) && apt(install))) throw new Error('apt-get install python3-venv failed');
    if (!hasVenv()) throw new Error(`${python} still has no venv module after apt-get install python3-venv`);
  }
  log(`installing schemathesis ${SCHEMATHESIS_VERSION} from PyPI into .data/schemathesis (one time)`);
  rmSync(VENV, { recursive: true, force: true });
  const venv = spawnSync(python, ['-m', 'venv', VENV], { encoding: 'utf8' });
  if (venv.status !== 0) throw new Error(`${python} -m venv failed: ${venv.stderr}`);
  const pip = spawnSync(join(VENV, 'bin', 'pip'), ['install', '-q', `schemathesis==${SCHEMATHESIS_VERSION}`], { encoding: 'utf8', timeout: 600_000 });
  if (pip.status !== 0) throw new Error(`pip install schemathesis==${SCHEMATHESIS_VERSION} failed: ${(pip.stderr ?? '').slice(-500)}`);
  if (!ready()) throw new Error('schemathesis installed but `st --version` does not run');
  return SCHEMATHESIS_BIN;
}
