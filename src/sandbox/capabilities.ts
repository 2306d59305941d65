import { spawnSync } from 'node:child_process';
import type { SandboxCapabilities } from './types.js';
import { SANDBOX_UID } from './types.js';

export const UNSHARE = '/usr/bin/unshare';
export const SETPRIV = '/usr/bin/setpriv';
export const PRLIMIT = '/usr/bin/prlimit';

/** What the probe found, including how to ask for a namespace on this host. */
export interface HostSandbox extends SandboxCapabilities {
  /** `unshare --net` also needs `--map-root-user` (no CAP_SYS_ADMIN, unprivileged user namespaces on). */
  mapRootUser: boolean;
}

let cached: HostSandbox | null = null;

/** True when the command runs and exits 0 within a second; any failure (missing binary, EPERM) is false. */
function works(cmd: string, args: string[]): boolean {
  const r = spawnSync(cmd, args, { stdio: 'ignore', timeout: 1000, env: {} });
  return !r.error && r.status === 0;
}

/**
 * Probes once what the host lets us enforce: a network namespace needs
 * CAP_SYS_ADMIN (or unprivileged user namespaces), dropping to `nobody` needs
 * root. Whatever fails falls back to the weaker level, which is then what
 * /healthz reports, so an operator sees a weak host instead of assuming.
 */
export function hostSandbox(): HostSandbox {
  if (cached) return cached;
  const plainNs = works(UNSHARE, ['--net', '--', '/bin/true']);
  const userNs = !plainNs && works(UNSHARE, ['--net', '--map-root-user', '--', '/bin/true']);
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const drop = isRoot && works(SETPRIV, [`--reuid=${SANDBOX_UID}`, `--regid=${SANDBOX_UID}`, '--clear-groups', '--', '/bin/true']);
  cached = Object.freeze({
    network_isolation: plainNs || userNs ? 'namespace' : 'runtime-guard',
    fs: 'node-permission-model',
    user: drop ? 'dropped' : 'inherited',
    rlimits: works(PRLIMIT, ['--data=268435456', '--', '/bin/true']) ? 'prlimit' : 'heap-only',
    mapRootUser: userNs,
  });
  return cached;
}

/** The enforcement levels in force on this host, for /healthz. */
export function sandboxCapabilities(): SandboxCapabilities {
  const h = hostSandbox();
  return { network_isolation: h.network_isolation, fs: h.fs, user: h.user, rlimits: h.rlimits };
}
