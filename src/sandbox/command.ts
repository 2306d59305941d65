import type { HostSandbox } from './capabilities.js';
import { PRLIMIT, SETPRIV, UNSHARE } from './capabilities.js';
import { DATA_HEADROOM_MB } from './bwrap.js';
import { isPythonModule, PYTHON_FLAGS, pythonInterpreter } from './python.js';
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
  /** runner.py, Python's counterpart of runner.js. */
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
 * Python's argv under the legacy wrappers: none of Node's permission flags
 * apply, so nothing but the uid, the rlimits and the network namespace holds
 * a Python tool in; bubblewrap (runtimes.ts pythonRuntime) is its sandbox. The memory cap is passed to the runner,
 * which sets it as RLIMIT_DATA (Python has no heap flag like V8's).
 */
export function pythonArgs(req: SandboxRequest, host: HostSandbox, files: SandboxFiles, network: NetworkIsolation | 'open'): string[] {
  // The runtime guard is a Node preload: it does not exist for Python, so such a host has no network wall for it.
  if (network === 'runtime-guard') throw new SandboxUnavailableError('Python tools need a network namespace, which this host does not allow; run workers where namespaces are allowed.');
  // Under Troupe's own uid a Python tool could read Troupe's environment (/proc/<ppid>/environ): nothing like Node's permission model stands in between.
  if (host.user !== 'dropped') throw new SandboxUnavailableError('Python tools need a separate user, which this host does not allow (run Troupe as root so tools drop to nobody).');
  const python = pythonInterpreter();
  if (!python) throw new SandboxUnavailableError('Python tools need python3, which this host does not have (Debian: apt-get install -y python3).');
  return [python.executable, ...PYTHON_FLAGS, files.pythonRunner, String(req.memoryMb)];
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
  const isolation = req.networkIsolation ?? host.network_isolation;
  // Internet access goes only through the egress proxy (bwrap); here it is simply no network.
  const network = isolation;
  const argv: string[] = [];
  if (network === 'namespace') argv.push(UNSHARE, '--net', ...(host.mapRootUser ? ['--map-root-user'] : []), '--');
  if (host.user === 'dropped') argv.push(SETPRIV, `--reuid=${SANDBOX_UID}`, `--regid=${SANDBOX_UID}`, '--clear-groups', '--');
  if (host.rlimits === 'prlimit') argv.push(...rlimitArgs(req));
  if (isPythonModule(req.handlerPath)) argv.push(...pythonArgs(req, host, files, network));
  else argv.push(files.node, ...nodeArgs(req, files, network === 'runtime-guard'));
  return { file: argv[0], args: argv.slice(1), network };
}
