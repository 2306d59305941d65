/**
 * Shared helpers for the hostile-tenant suite (test/integration/hostile-tenant.test.ts):
 * a version folder holding one tool, run straight through runInSandbox, by
 * default WITHOUT Node's permission model so each case tries the OS sandbox
 * alone, as a tool in a language without such a model (Python) would.
 */
import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { EgressSettings } from '../../src/lib/sandbox/egress.js';
import { runInSandbox, SANDBOX_FILES, type SandboxOverrides } from '../../src/lib/sandbox/run.js';
import { binaryAndLibraries, nodeRuntime } from '../../src/lib/sandbox/runtimes.js';
import type { SandboxRequest, SandboxResult } from '../../src/lib/sandbox/types.js';

export interface HostileRun {
  /** Extra host binaries bound read-only (with their libraries), e.g. /bin/sh for a fork bomb. */
  binaries?: string[];
  /** Keep Node's permission model on (the shipped JavaScript runtime). */
  permissionModel?: boolean;
  maxProcesses?: number;
  /** The egress proxy's rules for a call with internet access (the strict defaults otherwise). */
  egress?: EgressSettings;
  req?: Partial<SandboxRequest>;
}

/** Writes `source` as tool.js in a fresh 0755 version folder under `base`. */
export async function hostileVersion(base: string, source: string): Promise<Pick<SandboxRequest, 'rootDir' | 'handlerPath' | 'scratchDir'>> {
  const rootDir = await mkdtemp(join(base, 'version-'));
  await chmod(rootDir, 0o755);
  await writeFile(join(rootDir, 'tool.js'), source);
  const scratchDir = await mkdtemp(join(base, 'scratch-'));
  return { rootDir, handlerPath: join(rootDir, 'tool.js'), scratchDir };
}

/** Runs a handler module's source in the sandbox with `args`; 10 s and 128 MiB unless `opts.req` says otherwise. */
export async function runHostile(base: string, source: string, args: unknown = {}, opts: HostileRun = {}): Promise<SandboxResult> {
  const v = await hostileVersion(base, source);
  const req: SandboxRequest = { ...v, args, env: {}, timeoutMs: 10_000, memoryMb: 128, internetAccess: false, ...opts.req };
  const node = nodeRuntime(SANDBOX_FILES, { memoryMb: req.memoryMb, storage: !!req.storageDir, permissionModel: opts.permissionModel ?? false });
  const extra = (opts.binaries ?? []).flatMap((b) => binaryAndLibraries(b));
  const over: SandboxOverrides = { runtime: { ...node, readOnlyPaths: [...new Set([...node.readOnlyPaths, ...extra])] }, maxProcesses: opts.maxProcesses, egress: opts.egress };
  return runInSandbox(req, SANDBOX_FILES, over);
}

/** The tool's output, failing the test with the whole result otherwise. */
export function outputOf<T>(r: SandboxResult): T {
  if (!r.ok) throw new Error(`the tool did not return: ${JSON.stringify(r)}`);
  return r.output as T;
}

/** A handler prelude: `attempt(f)` returns f's value or the error's code. */
export const ATTEMPT = `const fs = require('fs');
const attempt = (f) => { try { return f(); } catch (e) { return e.code || e.message; } };
const attemptAsync = async (f) => { try { return await f(); } catch (e) { return e.code || e.message; } };
`;
