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
  /** Cap on the serialized result; default OUTPUT_LIMIT_BYTES. */
  outputLimitBytes?: number;
  /** Forces a network isolation level (tests); default: the best the host allows. */
  networkIsolation?: NetworkIsolation;
  /** Kills the call (shutdown); the result is then a `crash` the caller should not report as the tool's. */
  signal?: AbortSignal;
}

export type SandboxFailureKind = 'timeout' | 'memory' | 'crash' | 'error' | 'output_too_large';

export type SandboxResult = { ok: true; output: unknown } | { ok: false; error: string; kind: SandboxFailureKind };

/** `namespace`: an empty network namespace (no interfaces but a down loopback). `runtime-guard`: a preload that refuses sockets and DNS. */
export type NetworkIsolation = 'namespace' | 'runtime-guard';

/** What this host enforces; reported at /healthz. */
export interface SandboxCapabilities {
  network_isolation: NetworkIsolation;
  fs: 'node-permission-model';
  /** `dropped`: the tool runs as an unprivileged uid; `inherited`: as Troupe's own user. */
  user: 'dropped' | 'inherited';
  /** `prlimit`: kernel rlimits on data size, CPU time and file size on top of V8's heap cap. */
  rlimits: 'prlimit' | 'heap-only';
}

export const OUTPUT_LIMIT_BYTES = 256 * 1024;

/** The uid/gid tools run as when Troupe runs as root (conventionally `nobody`). */
export const SANDBOX_UID = 65534;
