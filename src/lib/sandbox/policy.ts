import type { SandboxConfig } from '../config/config.js';
import { configureSandbox, hostSandbox, sandboxCapabilities } from './capabilities.js';
import { pythonInterpreter } from './python.js';
import type { SandboxCapabilities } from './types.js';

/** A role that runs tenant code (tools, entrypoints) on a host weaker than production allows. */
export class WeakSandboxError extends Error {
  constructor(readonly caps: SandboxCapabilities, why: string | null, runsc = false) {
    super(
      runsc
        ? `Refusing to run tenant code: TROUPE_SANDBOX=runsc was chosen but gVisor does not work on this host (${why}). Install runsc (Debian: apt-get install runsc) and run Troupe as root (docs/operations.md), or choose another TROUPE_SANDBOX.`
        : `Refusing to run tenant code: the sandbox on this host is '${caps.level}' (${why ?? 'no bwrap'}), weaker than bwrap with seccomp, ` +
        'which NODE_ENV=production requires. Install bubblewrap and allow user namespaces (docs/operations.md), or set TROUPE_SANDBOX_ALLOW_WEAK=1 to accept the weaker level.',
    );
  }
}

interface Log {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/**
 * Applies the configured sandbox, probes the host once, logs the level in
 * force, and refuses to start a role that runs tenant code below
 * namespaces + seccomp in production unless the operator said so.
 * TROUPE_SANDBOX=bwrap refuses in any environment.
 */
export function enforceSandboxPolicy(config: SandboxConfig, log: Log): SandboxCapabilities {
  configureSandbox({ mode: config.mode, scratchMb: config.scratchMb });
  const caps = sandboxCapabilities();
  const why = hostSandbox().bwrapError;
  // Probed here, not on the first Python call, so no turn waits on it; null: Python tools fail with why.
  const found = pythonInterpreter();
  const python = found ? `${found.executable} ${found.version}` : null;
  const strong = caps.level === 'bwrap-seccomp' || caps.level === 'runsc';
  if (strong) {
    log.info({ sandbox: caps, python }, 'sandbox in force');
    return caps;
  }
  if (config.mode === 'bwrap' || config.mode === 'runsc' || (config.production && !config.allowWeak)) throw new WeakSandboxError(caps, why, config.mode === 'runsc');
  log.warn({ sandbox: caps, reason: why, allow_weak: config.allowWeak, python }, 'sandbox is weaker than bwrap with seccomp; tenant code is not isolated from other tenants');
  return caps;
}
