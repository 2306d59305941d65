import type { HostSandbox } from './capabilities.js';
import { PRLIMIT, SETPRIV, UNSHARE } from './capabilities.js';
import { DATA_HEADROOM_MB } from './bwrap.js';
import { isPythonModule } from './python.js';
import { permissionFlag } from './runtimes.js';
import type { NetworkIsolation, SandboxRequest } from './types.js';
import { SANDBOX_UID } from './types.js';
import { SandboxUnavailableError } from './unavailable.js';

/*
 * The legacy sandbox (before bubblewrap): `unshare --net`, `setpriv` and
 * `prlimit` around Node's permission model. It still runs where bwrap cannot
 * (TROUPE_SANDBOX=auto on a host without user namespaces; reported `weak` or
 * `namespace-net` and refused in production) and under TROUPE_SANDBOX=legacy,
 * which exists so bench/sandbox-startup can compare both in one run.
 */
/** Largest file a tool may write to its scratch directory. */
export const MAX_SCRATCH_FILE_BYTES = 64 * 1024 * 1024;

export interface SandboxFiles {
  node: string;
  runner: string;
  guard: string;
  /** runner.py, Python's counterpart of runner.js (bwrap only). */
  pythonRunner: string;
}

export interface SandboxCommand {
  file: string;
  args: string[];
  /** The network level actually applied to this call (none when internet access is on). */
  network: NetworkIsolation;
}

const MIB = 1024 * 1024;

/** Node's own flags: the permission model scoped to the version's files, the scratch dir and our two scripts. */
export function nodeArgs(req: SandboxRequest, files: SandboxFiles, guard: boolean): string[] {
  const writes = [req.scratchDir, ...(req.storageDir ? [req.storageDir] : [])];
  const reads = [req.rootDir, ...writes, files.runner, ...(guard ? [files.guard] : [])];
  return [
    permissionFlag(),
    // One flag per path: Node 20.20 takes a comma list as a single path.
    ...reads.map((p) => `--allow-fs-read=${p}`),
    ...writes.map((p) => `--allow-fs-write=${p}`),
    `--max-old-space-size=${req.memoryMb}`,
    '--no-warnings',
    ...(guard ? ['--require', files.guard] : []),
    files.runner,
  ];
}

/**
 * Python tools do not run under the legacy wrappers. Node's permission model
 * and runtime guard are its second wall; Python has none, and under these
 * wrappers every call shares one uid and the host's PID and mount
 * namespaces, so a Python tool read other calls' /proc/<pid>/environ (their
 * secrets), killed them with kill(-1) and wrote the host's /tmp
 * (test/integration/python-hostile.test.ts fails every one of those here).
 */
export function refusePython(): never {
  throw new SandboxUnavailableError('Python tools run only under the bubblewrap sandbox, which is not in force on this host (see /healthz sandbox.level and docs/operations.md).');
}

/** prlimit's limits: data size (heap + headroom), CPU seconds a little over the wall clock, file size, descriptors. */
function rlimitArgs(req: SandboxRequest): string[] {
  const cpuSeconds = Math.ceil(req.timeoutMs / 1000) + 1;
  return [PRLIMIT, `--data=${(req.memoryMb + DATA_HEADROOM_MB) * MIB}`, `--cpu=${cpuSeconds}`, `--fsize=${MAX_SCRATCH_FILE_BYTES}`, '--nofile=256', '--'];
}

/**
 * The argv that runs one call: each wrapper execs the next, so the process
 * we spawn is the tool's own process and one SIGKILL ends it. Order matters:
 * the namespace needs privileges, which setpriv then drops, and prlimit only
 * lowers limits, which any user may do.
 */
export function sandboxCommand(req: SandboxRequest, host: HostSandbox, files: SandboxFiles): SandboxCommand {
  if (isPythonModule(req.handlerPath)) refusePython();
  const isolation = req.networkIsolation ?? host.network_isolation;
  // Internet access goes only through the egress proxy (bwrap); here it is simply no network.
  const network = isolation;
  const argv: string[] = [];
  if (network === 'namespace') argv.push(UNSHARE, '--net', ...(host.mapRootUser ? ['--map-root-user'] : []), '--');
  if (host.user === 'dropped') argv.push(SETPRIV, `--reuid=${SANDBOX_UID}`, `--regid=${SANDBOX_UID}`, '--clear-groups', '--');
  if (host.rlimits === 'prlimit') argv.push(...rlimitArgs(req));
  argv.push(files.node, ...nodeArgs(req, files, network === 'runtime-guard'));
  return { file: argv[0], args: argv.slice(1), network };
}
