/**
 * Where things are as a sandboxed tool sees them. Fixed, so no host path
 * (version folder, scratch base, Troupe's checkout) leaks into a tool and a
 * handler's paths are the same on every host.
 */
export const SANDBOX_PATHS = Object.freeze({
  /** The version's files, read-only; also the working directory. */
  version: '/agent',
  /** Private size-capped tmpfs; TMPDIR and context.scratchDir. */
  scratch: '/tmp',
  /** A storage binding's checkout, read-write; TROUPE_STORAGE_DIR. */
  storage: '/storage',
  /** The runner script that loads the handler. */
  runner: '/run/troupe/runner.js',
  /** Python's runner; it imports egress_bridge.py from beside it when the call has internet access. */
  pythonRunner: '/run/troupe/runner.py',
  /** Where the egress proxy's Unix socket is bound for a call with internet access. */
  egressSocket: '/run/troupe/egress.sock',
});
