import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SandboxCapabilities, SandboxLevel, SandboxMode } from './types.js';
import { SANDBOX_UID } from './types.js';

export const UNSHARE = '/usr/bin/unshare';
export const SETPRIV = '/usr/bin/setpriv';
export const PRLIMIT = '/usr/bin/prlimit';

/** What the probe found, including how to ask for a namespace on this host. */
export interface HostSandbox extends SandboxCapabilities {
  /** `unshare --net` also needs `--map-root-user` (no CAP_SYS_ADMIN, unprivileged user namespaces on). */
  mapRootUser: boolean;
  /** Why bwrap is not in force, when it is not. */
  bwrapError: string | null;
}

export interface SandboxPolicy {
  /** `auto`: bwrap when the host allows it, else the legacy wrappers; `bwrap`: bwrap or no tools; `legacy`: the pre-bwrap wrappers (benchmarks). */
  mode: SandboxMode;
  scratchMb: number;
}

const PROBE_TIMEOUT_MS = 15_000;

let policy: SandboxPolicy = { mode: 'auto', scratchMb: 64 };
let cached: HostSandbox | null = null;

/** Set at start from Config (and by benchmarks); a changed policy is probed again on its next use, the same one is not. */
export function configureSandbox(p: SandboxPolicy): void {
  if (p.mode === policy.mode && p.scratchMb === policy.scratchMb) return;
  policy = Object.freeze({ mode: p.mode, scratchMb: p.scratchMb });
  cached = null;
}

export function sandboxPolicy(): SandboxPolicy {
  return policy;
}

/** True when the command runs and exits 0 within a second; any failure (missing binary, EPERM) is false. */
function works(cmd: string, args: string[]): boolean {
  const r = spawnSync(cmd, args, { stdio: 'ignore', timeout: 1000, env: {} });
  return !r.error && r.status === 0;
}

/** A probe call's verdict: null when its script exited 0, else why not (a timeout, its exit and stderr's start). */
function probeFailure(r: SpawnSyncReturns<Buffer>): string | null {
  if (r.error) return `${r.error.message} (within ${PROBE_TIMEOUT_MS} ms)`;
  if (r.status !== 0) return `exit ${r.status ?? r.signal}: ${String(r.stderr).trim().slice(0, 300)}`;
  return null;
}

/**
 * Runs a real call's command (every namespace, the seccomp filter on its fd,
 * the uid drop) with a script that passes only if the kernel reports the
 * filter in force. Lazy imports: bwrap.ts and runtimes.ts import this file.
 */
function probeBwrap(isRoot: boolean): string | null {
  const { bwrapCommand } = require('./bwrap.js') as typeof import('./bwrap.js');
  const { binaryAndLibraries } = require('./runtimes.js') as typeof import('./runtimes.js');
  const { seccompFilter } = require('./seccomp.js') as typeof import('./seccomp.js');
  const { CALL_UID_BASE, CALL_UID_SPAN } = require('./uid-pool.js') as typeof import('./uid-pool.js');
  const dir = mkdtempSync(join(tmpdir(), 'troupe-bwrap-probe-'));
  chmodSync(dir, 0o755); // bound at /agent and opened by the dropped uid
  let fd = -1;
  try {
    writeFileSync(join(dir, 'seccomp.bpf'), seccompFilter());
    fd = openSync(join(dir, 'seccomp.bpf'), 'r');
    const script = 'process.exit(/Seccomp:\\s*2/.test(require("fs").readFileSync("/proc/self/status","utf8"))&&process.getuid()===1000?0:7)';
    const runtime = { argv: [process.execPath, '-e', script], readOnlyPaths: binaryAndLibraries(process.execPath), files: {}, env: {} };
    const req = { rootDir: dir, handlerPath: join(dir, 'x'), args: null, env: {}, timeoutMs: PROBE_TIMEOUT_MS, memoryMb: 64, internetAccess: false, scratchDir: dir };
    // A uid of the call range, not 65534: RLIMIT_NPROC counts every process of the uid, and nobody's may be many.
    const argv = bwrapCommand(req, { runtime, hostUid: isRoot ? CALL_UID_BASE + CALL_UID_SPAN - 1 : null, scratchMb: 1 });
    const r = spawnSync(argv[0], argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe', 'ignore', fd], timeout: PROBE_TIMEOUT_MS, env: {} });
    return probeFailure(r);
  } catch (e) {
    return (e as Error).message;
  } finally {
    if (fd >= 0) closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Runs a real runsc call (runsc.ts: an OCI bundle with an empty read-only
 * root) whose script passes only as the container's uid inside gVisor
 * (its kernel reports itself in /proc/version as "Linux ... #1 SMP Sun Jan 10 15:06:54 PST 2016"
 * and no host process shows in /proc).
 */
function probeRunsc(): string | null {
  const { RUNSC, runscCommand, runscSpec } = require('./runsc.js') as typeof import('./runsc.js');
  const { binaryAndLibraries } = require('./runtimes.js') as typeof import('./runtimes.js');
  const dir = mkdtempSync(join(tmpdir(), 'troupe-runsc-probe-'));
  chmodSync(dir, 0o755);
  const id = `troupe-probe-${dir.slice(dir.lastIndexOf('-') + 1)}`;
  try {
    for (const d of ['root', 'state', 'out', 'agent']) mkdirSync(join(dir, d), { mode: 0o755 });
    chmodSync(join(dir, 'out'), 0o777);
    const script = 'const fs=require("fs");process.exit(process.getuid()===1000&&fs.readdirSync("/proc").filter(n=>/^\\d+$/.test(n)).length<5&&!fs.existsSync("/etc/passwd")?0:7)';
    const runtime = { argv: [process.execPath, '-e', script], readOnlyPaths: binaryAndLibraries(process.execPath), files: {}, env: {} };
    const req = { rootDir: join(dir, 'agent'), handlerPath: join(dir, 'agent', 'x'), args: null, env: {}, timeoutMs: PROBE_TIMEOUT_MS, memoryMb: 64, internetAccess: false, scratchDir: dir };
    writeFileSync(join(dir, 'config.json'), JSON.stringify(runscSpec(req, { runtime, scratchMb: 1, resultDir: join(dir, 'out'), env: {} })));
    const argv = runscCommand(join(dir, 'state'), dir, id);
    const r = spawnSync(argv[0], argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'], timeout: PROBE_TIMEOUT_MS, env: {} });
    spawnSync(RUNSC, ['--rootless', '--root', join(dir, 'state'), 'delete', '--force', id], { stdio: 'ignore', timeout: PROBE_TIMEOUT_MS });
    return probeFailure(r);
  } catch (e) {
    return (e as Error).message;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** TROUPE_SANDBOX=runsc: gVisor or nothing; the reason rides in bwrapError (policy.ts refuses to start on it). */
function runscSandbox(scratchMb: number): HostSandbox {
  const error = probeRunsc();
  const ok = error === null;
  return Object.freeze({
    level: ok ? 'runsc' : 'weak',
    // gVisor's Sentry runs under its own seccomp filter; the tool's syscalls are served by it, not the host kernel.
    seccomp: ok,
    // No cgroups (rootless, --ignore-cgroups): nothing but RLIMIT_DATA per process bounds a fork bomb.
    process_limit: 'none',
    scratch_quota_mb: ok ? scratchMb : null,
    network_isolation: 'namespace',
    fs: ok ? 'gvisor-oci-bundle' : 'node-permission-model',
    user: 'inherited',
    rlimits: 'prlimit',
    mapRootUser: false,
    bwrapError: error && `runsc: ${error}`,
  } as HostSandbox);
}

function levelOf(bwrap: boolean, netNs: boolean): SandboxLevel {
  if (bwrap) return 'bwrap-seccomp';
  return netNs ? 'namespace-net' : 'weak';
}

/**
 * Probes once what the host lets us enforce. bwrap needs unprivileged user
 * namespaces (or root); the legacy wrappers need less and enforce less.
 * Whatever fails falls back to the weaker level, which is then what /healthz
 * reports, so an operator sees a weak host instead of assuming.
 */
export function hostSandbox(): HostSandbox {
  if (cached) return cached;
  if (policy.mode === 'runsc') return (cached = runscSandbox(policy.scratchMb));
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  // Once more on failure: a loaded host can be slow to start Node once, and a failed probe downgrades the whole process.
  const bwrapError = policy.mode === 'legacy' ? 'TROUPE_SANDBOX=legacy' : probeBwrap(isRoot) && probeBwrap(isRoot);
  const plainNs = works(UNSHARE, ['--net', '--', '/bin/true']);
  const userNs = !plainNs && works(UNSHARE, ['--net', '--map-root-user', '--', '/bin/true']);
  const drop = isRoot && works(SETPRIV, [`--reuid=${SANDBOX_UID}`, `--regid=${SANDBOX_UID}`, '--clear-groups', '--', '/bin/true']);
  const bwrap = bwrapError === null;
  cached = Object.freeze({
    level: levelOf(bwrap, plainNs || userNs),
    seccomp: bwrap,
    process_limit: bwrap ? (isRoot ? 'per-call-uid' : 'user-ulimit') : 'none',
    scratch_quota_mb: bwrap ? policy.scratchMb : null,
    network_isolation: bwrap || plainNs || userNs ? 'namespace' : 'runtime-guard',
    fs: bwrap ? 'bwrap-mount-namespace' : 'node-permission-model',
    user: bwrap && isRoot ? 'per-call' : drop && !bwrap ? 'dropped' : 'inherited',
    rlimits: works(PRLIMIT, ['--data=268435456', '--', '/bin/true']) ? 'prlimit' : 'heap-only',
    mapRootUser: userNs,
    bwrapError,
  });
  return cached;
}

/** The enforcement levels in force on this host, for /healthz. */
export function sandboxCapabilities(): SandboxCapabilities {
  const { mapRootUser: _m, bwrapError: _b, ...caps } = hostSandbox();
  return caps;
}
