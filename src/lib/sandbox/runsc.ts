/**
 * The gVisor tier (TROUPE_SANDBOX=runsc): each call is an OCI container run
 * by `runsc run` from a bundle of its own. The root is an empty read-only
 * directory; only the runtime's files, the version (/agent), a size-capped
 * tmpfs (/tmp), the storage checkout and a result directory are mounted. The
 * tool's syscalls go to gVisor's user-space kernel, not the host's.
 *
 * This runsc (Debian 20221219) passes no fd beyond stdio to the container,
 * so the runner writes its result to a file in a bound directory
 * (TROUPE_RESULT_FILE) instead of fd 3.
 */
import { relative } from 'node:path';
import { DATA_HEADROOM_MB } from './bwrap.js';
import { SANDBOX_PATHS } from './paths.js';
import type { Runtime } from './runtimes.js';
import type { SandboxRequest } from './types.js';

export const RUNSC = '/usr/bin/runsc';
/** The tool's uid and gid in the container. */
export const RUNSC_UID = 1000;
/** Where the result directory is inside; the runner writes `result` there. */
export const RESULT_DIR = '/run/troupe/out';
export const RESULT_FILE = `${RESULT_DIR}/result`;

const MIB = 1024 * 1024;

export interface RunscOptions {
  runtime: Runtime;
  scratchMb: number;
  /** Host directory bound read-write at RESULT_DIR. */
  resultDir: string;
  /** The environment the tool sees (secrets included); it goes into the bundle, never onto a command line. */
  env: Record<string, string>;
}

interface Mount { destination: string; type: string; source: string; options: string[] }

function ro(source: string, destination: string): Mount {
  return { destination, type: 'bind', source, options: ['rbind', 'ro', 'nosuid', 'nodev'] };
}

export function runscMounts(req: SandboxRequest, o: RunscOptions): Mount[] {
  const p = SANDBOX_PATHS;
  const out: Mount[] = [{ destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] }];
  for (const path of o.runtime.readOnlyPaths) out.push(ro(path, path));
  for (const [at, host] of Object.entries(o.runtime.files)) out.push(ro(host, at));
  out.push(ro(req.rootDir, p.version));
  out.push({ destination: p.scratch, type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'nodev', 'mode=1777', `size=${o.scratchMb * MIB}`] });
  if (req.storageDir) out.push({ destination: p.storage, type: 'bind', source: req.storageDir, options: ['rbind', 'rw', 'nosuid', 'nodev'] });
  if (req.egressSocket) out.push({ destination: p.egressSocket, type: 'bind', source: req.egressSocket, options: ['rbind', 'rw', 'nosuid', 'nodev'] });
  out.push({ destination: RESULT_DIR, type: 'bind', source: o.resultDir, options: ['rbind', 'rw', 'nosuid', 'nodev'] });
  return out;
}

/** The same limits as bwrap's (bwrap.ts `rlimits`); processes are bounded by gVisor's own PID namespace. */
export function runscRlimits(req: SandboxRequest, o: RunscOptions): { type: string; hard: number; soft: number }[] {
  const lim = (type: string, n: number) => ({ type, hard: n, soft: n });
  return [
    lim('RLIMIT_NOFILE', 256),
    lim('RLIMIT_FSIZE', o.scratchMb * MIB),
    lim('RLIMIT_CPU', Math.ceil(req.timeoutMs / 1000) + 1),
    lim('RLIMIT_DATA', (req.memoryMb + DATA_HEADROOM_MB) * MIB),
  ];
}

/**
 * The config.json of one call. A network namespace without a path is a
 * fresh one (and runsc runs with --network=none: loopback only).
 */
export function runscSpec(req: SandboxRequest, o: RunscOptions): object {
  return {
    ociVersion: '1.0.2',
    process: {
      terminal: false,
      user: { uid: RUNSC_UID, gid: RUNSC_UID },
      args: o.runtime.argv,
      env: Object.entries({ ...o.env, TROUPE_RESULT_FILE: RESULT_FILE }).map(([k, v]) => `${k}=${v}`),
      cwd: SANDBOX_PATHS.version,
      rlimits: runscRlimits(req, o),
      noNewPrivileges: true,
      capabilities: { bounding: [], effective: [], inheritable: [], permitted: [], ambient: [] },
    },
    root: { path: 'root', readonly: true },
    hostname: 'sandbox',
    mounts: runscMounts(req, o),
    linux: { namespaces: ['pid', 'ipc', 'uts', 'mount', 'network'].map((type) => ({ type })) },
  };
}

/**
 * The argv: rootless (no cgroup setup; limits are the rlimits and the tmpfs
 * size), no network, state under the call's dir. A call with internet access
 * also gets --host-uds=open, which lets it connect to host Unix sockets that
 * are bound in: the only one bound is its egress socket.
 */
export function runscCommand(stateDir: string, bundleDir: string, id: string, egress = false): string[] {
  return [RUNSC, '--rootless', '--network=none', '--ignore-cgroups', ...(egress ? ['--host-uds=open'] : []), '--root', stateDir, 'run', '--bundle', bundleDir, id];
}

/** Where the handler is inside: the same file under /agent. */
export function runscHandlerPath(req: SandboxRequest): string {
  return `${SANDBOX_PATHS.version}/${relative(req.rootDir, req.handlerPath)}`;
}
