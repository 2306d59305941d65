/**
 * Names that would reconfigure the runtime or the dynamic loader of the
 * wrappers (some run as root) rather than reach the tool as data: a secret
 * called NODE_OPTIONS could lift the permission model, LD_PRELOAD could load
 * code into unshare. They still reach the handler through `context.secrets`.
 */
const RESERVED = /^(NODE_|LD_|UV_|OPENSSL_|DYLD_|MALLOC_)/;

export function isReservedEnvName(name: string): boolean {
  return RESERVED.test(name);
}

/**
 * The tool's whole environment: its declared secrets, TMPDIR (so os.tmpdir()
 * is its scratch dir), TROUPE_STORAGE_DIR when the session has a storage
 * binding, and nothing of Troupe's own.
 */
export function childEnv(secrets: Record<string, string>, scratchDir: string, storageDir?: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(secrets)) if (!isReservedEnvName(k)) env[k] = v;
  env.TMPDIR = scratchDir;
  if (storageDir) env.TROUPE_STORAGE_DIR = storageDir;
  return env;
}
