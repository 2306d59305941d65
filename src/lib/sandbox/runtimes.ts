/**
 * What a language runtime needs inside the sandbox, as data for the command
 * builder: the argv to run (paths as the tool sees them), the host files to
 * bind read-only at the same path (the interpreter and the shared libraries it
 * loads, nothing else of the host), extra files at a sandbox path, and its env.
 *
 * Binds are opened by the call's unprivileged uid (bwrap runs after the uid
 * drop), so every path here must be world-readable and its directories
 * world-traversable: an interpreter under /root (pyenv) has to be copied or
 * installed elsewhere first.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { SANDBOX_PATHS } from './paths.js';
import { PYTHON_FLAGS, pythonInterpreter } from './python.js';
import { SandboxUnavailableError } from './unavailable.js';

export interface Runtime {
  argv: string[];
  /** Host paths bound read-only at the same path inside. */
  readOnlyPaths: string[];
  /** Sandbox path → host file, bound read-only (our own scripts). */
  files: Record<string, string>;
  env: Record<string, string>;
}

export interface NodeRuntimeFiles {
  node: string;
  runner: string;
  guard: string;
}

const libCache = new Map<string, string[]>();

/**
 * The binary's real path and every shared object the loader maps for it (ldd
 * asks the loader itself, so this follows the host's own search path); read
 * once per binary per process.
 */
export function binaryAndLibraries(binary: string): string[] {
  const real = realpathSync(binary);
  let libs = libCache.get(real);
  if (!libs) {
    const out = execFileSync('ldd', [real], { encoding: 'utf8', env: {}, timeout: 5000 });
    libs = [...new Set(out.split('\n').map((l) => /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(l)?.[1]).filter((p): p is string => !!p))];
    libCache.set(real, libs);
  }
  return [real, ...libs];
}

/** Node 20 and 22 spell the flag `--experimental-permission`; later versions `--permission`. */
export function permissionFlag(): string {
  return Number(process.versions.node.split('.')[0]) >= 23 ? '--permission' : '--experimental-permission';
}

/**
 * Node with its permission model kept as a second layer: it may read the
 * version, scratch, storage and the runner, write scratch and storage, and
 * never spawn. The OS sandbox is the boundary; this only narrows what a
 * JavaScript tool can reach before the kernel is asked.
 */
export function nodeRuntime(files: NodeRuntimeFiles, opts: { memoryMb: number; storage: boolean; permissionModel?: boolean; resultFile?: string }): Runtime {
  const p = SANDBOX_PATHS;
  const writes = [p.scratch, ...(opts.storage ? [p.storage] : []), ...(opts.resultFile ? [opts.resultFile] : [])];
  const reads = [p.version, ...writes, p.runner];
  const node = realpathSync(files.node);
  // Off only in tests that try the OS layer alone, as a tool in a language without such a model would.
  const permissions = opts.permissionModel === false ? [] : [permissionFlag(), ...reads.map((r) => `--allow-fs-read=${r}`), ...writes.map((w) => `--allow-fs-write=${w}`)];
  return {
    argv: [
      node,
      ...permissions,
      `--max-old-space-size=${opts.memoryMb}`,
      '--no-warnings',
      p.runner,
    ],
    readOnlyPaths: binaryAndLibraries(node),
    files: { [p.runner]: files.runner },
    env: {},
  };
}

export interface PythonRuntimeFiles {
  pythonRunner: string;
}

const pythonPathsCache = new Map<string, string[]>();

/** The shared objects a set of modules load, from one ldd run over all of them (one per module took seconds). */
function librariesOf(modules: string[]): string[] {
  if (modules.length === 0) return [];
  // Exit status is not success when one file is not dynamic; what it printed for the rest still holds.
  const r = spawnSync('ldd', modules, { encoding: 'utf8', env: {}, timeout: 10_000 });
  return r.stdout.split('\n').map((l) => /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(l)?.[1]).filter((p): p is string => !!p);
}

/**
 * The interpreter, its standard library and every shared object the
 * interpreter or a compiled stdlib module (lib-dynload: _ssl, _ctypes, ...)
 * loads. Nothing else of the host: no site-packages, no user files.
 */
function pythonPaths(executable: string, stdlib: string): string[] {
  let paths = pythonPathsCache.get(executable);
  if (!paths) {
    const dynload = join(stdlib, 'lib-dynload');
    const modules = existsSync(dynload) ? readdirSync(dynload).filter((f) => f.endsWith('.so')).map((f) => join(dynload, f)) : [];
    paths = [...new Set([...binaryAndLibraries(executable), stdlib, ...librariesOf(modules)])];
    pythonPathsCache.set(executable, paths);
  }
  return paths;
}

/**
 * python3 isolated (-I -S -B) with runner.py, which sets the memory cap as
 * RLIMIT_DATA itself. Python has no permission model of its own: the OS
 * sandbox is all that holds it, which is why Python tools run only here or
 * under the legacy wrappers' namespace and uid drop.
 */
export function pythonRuntime(files: PythonRuntimeFiles, opts: { memoryMb: number }): Runtime {
  const python = pythonInterpreter();
  if (!python) throw new SandboxUnavailableError('Python tools need python3, which this host does not have where the sandbox can run it (Debian: apt-get install -y python3).');
  const executable = realpathSync(python.executable);
  return {
    argv: [executable, ...PYTHON_FLAGS, SANDBOX_PATHS.pythonRunner, String(opts.memoryMb)],
    readOnlyPaths: pythonPaths(executable, python.stdlib),
    // With internet access, the egress wiring binds egress_bridge.py beside the runner, which starts it.
    files: { [SANDBOX_PATHS.pythonRunner]: files.pythonRunner },
    env: {},
  };
}
