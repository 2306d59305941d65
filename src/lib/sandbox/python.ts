import { spawnSync } from 'node:child_process';
import { isAbsolute } from 'node:path';
import { hostSandbox, SETPRIV } from './capabilities.js';
import { SANDBOX_UID } from './types.js';

/**
 * `-I`: isolated (no PYTHON* variables, so a secret named PYTHONPATH stays
 * data; no user site; not the script's folder on sys.path). `-S`: no site
 * packages, so a tool sees the standard library and its own files only, as a
 * JS tool sees Node's built-ins. `-B`: no bytecode written beside the
 * version's read-only files.
 */
export const PYTHON_FLAGS = Object.freeze(['-I', '-S', '-B']);

/** The interpreter Python tools run under, as found on this host. */
export interface PythonInterpreter {
  /** The real binary (sys.executable), not a shim: the sandbox runs it with an empty environment and no PATH. */
  executable: string;
  /** sys.base_prefix. */
  prefix: string;
  /** The standard library's folder, for a sandbox that mounts only what the runtime needs. */
  stdlib: string;
  version: string;
}

const PROBE = 'import json, sys, sysconfig; print(json.dumps([sys.executable, sys.base_prefix, sysconfig.get_path("stdlib"), "%d.%d.%d" % sys.version_info[:3]]))';
const CANDIDATES = ['python3', '/usr/bin/python3'];

let cached: PythonInterpreter | null | undefined;

function ask(cmd: string): PythonInterpreter | null {
  const r = spawnSync(cmd, [...PYTHON_FLAGS, '-c', PROBE], { encoding: 'utf8', timeout: 5000 });
  if (r.error || r.status !== 0) return null;
  try {
    const [executable, prefix, stdlib, version] = JSON.parse(r.stdout.trim()) as [string, string, string, string];
    return isAbsolute(executable) && isAbsolute(stdlib) ? { executable, prefix, stdlib, version } : null;
  } catch {
    return null;
  }
}

/**
 * Whether the uid tools run as can use it: pyenv's interpreter under /root
 * (0700) is not, Debian's /usr/bin/python3 is. It must import from its own
 * standard library: start-up alone proves nothing (its start-up modules are
 * frozen in), and one that cannot read its prefix falls back to another's.
 */
function startsAsSandboxUser(python: PythonInterpreter): boolean {
  const args = [`--reuid=${SANDBOX_UID}`, `--regid=${SANDBOX_UID}`, '--clear-groups', '--', python.executable, ...PYTHON_FLAGS, '-c', 'import asyncio, json; print(json.__file__)'];
  const r = spawnSync(SETPRIV, args, { encoding: 'utf8', timeout: 5000, env: {} });
  return !r.error && r.status === 0 && r.stdout.startsWith(python.prefix + '/');
}

/**
 * Finds python3 once, on first use: the one on PATH resolved to its real
 * binary, else Debian's. Null when there is none the sandbox can run; Python
 * tools then fail with an error that says so.
 */
export function pythonInterpreter(): PythonInterpreter | null {
  if (cached !== undefined) return cached;
  // Tools run as another uid (nobody, or a per-call one under bwrap) whenever Troupe is root.
  const dropped = hostSandbox().user !== 'inherited';
  cached = null;
  for (const candidate of CANDIDATES) {
    const found = ask(candidate);
    if (found && (!dropped || startsAsSandboxUser(found))) {
      cached = Object.freeze(found);
      break;
    }
  }
  return cached;
}

/** A tool module is run by Python when its file says so; everything else is Node's. */
export function isPythonModule(path: string): boolean {
  return path.endsWith('.py');
}
