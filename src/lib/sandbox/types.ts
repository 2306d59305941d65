/** One custom tool call to run in the sandbox. */
export interface SandboxRequest {
  /** The version's extracted files; the handler may read here and nowhere else (besides scratchDir). */
  rootDir: string;
  /** Absolute path of the handler module, inside rootDir. */
  handlerPath: string;
  args: unknown;
  /** Declared secrets only: name → value. They reach `context.secrets` and the process environment. */
  env: Record<string, string>;
  timeoutMs: number;
  memoryMb: number;
  internetAccess: boolean;
  /** With internetAccess: the only hosts the egress proxy lets the call reach (`sandbox.allowed_domains`); absent = any public host. */
  allowedDomains?: readonly string[];
  /** Writable (and readable) by the handler; the caller creates and removes it. */
  scratchDir: string;
  /** A storage binding's files, checked out for this call; readable and writable like scratchDir. */
  storageDir?: string;
  /**
   * Instead of calling `handler`, return this named export of the module
   * (the agent's entrypoint object), with functions dropped.
   */
  exportName?: string;
  /** With exportName: run one step of the export's run function, `args` its input (a code agent's step, docs/code-agents.md). */
  agentStep?: boolean;
  /** Cap on the serialized result; default OUTPUT_LIMIT_BYTES. */
  outputLimitBytes?: number;
  /** Forces a network isolation level (tests); default: the best the host allows. */
  networkIsolation?: NetworkIsolation;
  /** Kills the call (shutdown); the result is then a `crash` the caller should not report as the tool's. */
  signal?: AbortSignal;
  /**
   * Host path of this call's egress proxy socket (Unix), bound at
   * SANDBOX_PATHS.egressSocket. Every call has its own empty network
   * namespace; with internet access this socket is its only way out, and
   * without one a call with internet access has no network at all.
   */
  egressSocket?: string;
}

export type SandboxFailureKind = 'timeout' | 'memory' | 'crash' | 'error' | 'output_too_large';

export type SandboxResult = { ok: true; output: unknown } | { ok: false; error: string; kind: SandboxFailureKind };

/** `namespace`: an empty network namespace (no interfaces but a down loopback). `runtime-guard`: a preload that refuses sockets and DNS. */
export type NetworkIsolation = 'namespace' | 'runtime-guard';

/** `TROUPE_SANDBOX`: which sandbox runs tools. */
export type SandboxMode = 'auto' | 'bwrap' | 'legacy' | 'runsc';

/**
 * `bwrap-seccomp`: bubblewrap with user, PID, mount, IPC, UTS and network
 * namespaces and the seccomp filter. `namespace-net`: the legacy wrappers, a
 * network namespace and Node's permission model. `weak`: Node's permission
 * model and a runtime guard only.
 */
export type SandboxLevel = 'runsc' | 'bwrap-seccomp' | 'namespace-net' | 'weak';

/** What this host enforces; reported at /healthz. */
export interface SandboxCapabilities {
  level: SandboxLevel;
  seccomp: boolean;
  /** `per-call-uid`: RLIMIT_NPROC on a host uid of the call's own; `user-ulimit`: only Troupe's user's own limit, shared with it (not root). */
  process_limit: 'per-call-uid' | 'user-ulimit' | 'none';
  /** Size of each call's scratch tmpfs; null when scratch is a host folder without a quota. */
  scratch_quota_mb: number | null;
  network_isolation: NetworkIsolation;
  fs: 'bwrap-mount-namespace' | 'gvisor-oci-bundle' | 'node-permission-model';
  /** `per-call`/`dropped`: the tool runs as an unprivileged host uid; `inherited`: as Troupe's own (without its capabilities under bwrap). */
  user: 'per-call' | 'dropped' | 'inherited';
  /** `prlimit`: kernel rlimits on data size, CPU time and file size on top of V8's heap cap. */
  rlimits: 'prlimit' | 'heap-only';
}

export const OUTPUT_LIMIT_BYTES = 256 * 1024;

/** The uid/gid tools run as when Troupe runs as root (conventionally `nobody`). */
export const SANDBOX_UID = 65534;
