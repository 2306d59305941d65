/**
 * The bubblewrap command for one call: every namespace bwrap offers, a root
 * that holds only the runtime's files, the version read-only at /agent, a
 * size-capped tmpfs at /tmp, the storage checkout and egress socket when
 * asked, the seccomp filter on an inherited fd, and rlimits set before the
 * uid drop. The wrappers exec each other, so the spawned pid is bwrap's.
 */
import { relative } from 'node:path';
import { PRLIMIT, SETPRIV } from './capabilities.js';
import { SANDBOX_PATHS } from './paths.js';
import type { Runtime } from './runtimes.js';
import type { SandboxRequest } from './types.js';

export const BWRAP = '/usr/bin/bwrap';
/** The fd the runner writes its result to, and the fd bwrap reads the seccomp program from. */
export const RESULT_FD = 3;
export const SECCOMP_FD = 4;
/** The tool's uid and gid inside its user namespace (the host uid differs per call). */
export const INNER_ID = 1000;
/** Headroom over the V8 heap cap for the rest of the process (code, stacks, buffers) under RLIMIT_DATA. */
export const DATA_HEADROOM_MB = 128;
/** Processes and threads per call: Node's own threads, a runtime's workers, a few children; a fork bomb stops here. */
export const MAX_PROCESSES = 64;
export const DEFAULT_SCRATCH_MB = 64;

const MIB = 1024 * 1024;

export interface BwrapOptions {
  runtime: Runtime;
  /** Host uid to drop to before bwrap (Troupe is root); null: run as Troupe's own uid. */
  hostUid: number | null;
  scratchMb: number;
  /** Processes per call (RLIMIT_NPROC); lowered by tests. */
  maxProcesses?: number;
}

/**
 * The limits: data (heap + headroom), CPU seconds a little over the wall
 * clock, file size, descriptors, and processes when the call has a host uid
 * of its own. Under Troupe's own uid RLIMIT_NPROC would count Troupe's
 * threads, every other call and (on a laptop) the user's whole session, so a
 * small cap would refuse ordinary calls: the user's own limit stays.
 */
export function rlimits(req: SandboxRequest, o: BwrapOptions): string[] {
  const cpuSeconds = Math.ceil(req.timeoutMs / 1000) + 1;
  return [
    `--data=${(req.memoryMb + DATA_HEADROOM_MB) * MIB}`,
    `--cpu=${cpuSeconds}`,
    `--fsize=${o.scratchMb * MIB}`,
    '--nofile=256',
    ...(o.hostUid !== null ? [`--nproc=${o.maxProcesses ?? MAX_PROCESSES}`] : []),
  ];
}

/** Where the handler is as the tool sees it: the same file under /agent. */
export function sandboxHandlerPath(req: SandboxRequest): string {
  return `${SANDBOX_PATHS.version}/${relative(req.rootDir, req.handlerPath)}`;
}

function mounts(req: SandboxRequest, o: BwrapOptions): string[] {
  const p = SANDBOX_PATHS;
  const out = ['--proc', '/proc', '--dev', '/dev'];
  for (const path of o.runtime.readOnlyPaths) out.push('--ro-bind', path, path);
  for (const [at, host] of Object.entries(o.runtime.files)) out.push('--ro-bind', host, at);
  out.push('--ro-bind', req.rootDir, p.version);
  out.push('--size', String(o.scratchMb * MIB), '--perms', '1777', '--tmpfs', p.scratch);
  if (req.storageDir) out.push('--bind', req.storageDir, p.storage);
  if (req.egressSocket) out.push('--bind', req.egressSocket, p.egressSocket);
  out.push('--remount-ro', '/');
  return out;
}

/**
 * The full argv. The environment is not on it: bwrap passes its own (which
 * is exactly the tool's, see env.ts) to the tool, so secrets never show in a
 * command line. --unshare-net holds for every call: a call with internet
 * access reaches out only through the egress socket.
 */
export function bwrapCommand(req: SandboxRequest, o: BwrapOptions): string[] {
  const argv = [PRLIMIT, ...rlimits(req, o), '--'];
  if (o.hostUid !== null) argv.push(SETPRIV, `--reuid=${o.hostUid}`, `--regid=${o.hostUid}`, '--clear-groups', '--');
  argv.push(
    BWRAP,
    '--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-net', '--unshare-cgroup-try',
    '--uid', String(INNER_ID), '--gid', String(INNER_ID), '--hostname', 'sandbox',
    '--die-with-parent', '--new-session',
    '--seccomp', String(SECCOMP_FD),
    ...mounts(req, o),
    '--chdir', SANDBOX_PATHS.version,
    '--',
    ...o.runtime.argv,
  );
  return argv;
}
