import type { SandboxRequest, SandboxResult } from '../../src/sandbox/types.js';
import { VersionFiles, type Scratch } from '../../src/sandbox/version-files.js';
import type { AgentVersionDoc, ToolDef } from '../../src/store/agents.js';
import type { SessionDoc } from '../../src/store/sessions.js';
import type { ToolRunResult } from '../session/messages.js';
import { checkArguments } from './input-check.js';
import type { ToolRunJob } from './messages.js';

/** What running one job needs; the worker wires real stores, tests may wire their own. */
export interface ToolRunnerDeps {
  session(id: string): Promise<SessionDoc | null>;
  version(orgId: string, versionId: string): Promise<AgentVersionDoc | null>;
  secrets(session: SessionDoc, declared: readonly string[]): Promise<Record<string, string>>;
  versionDir(version: AgentVersionDoc): Promise<string>;
  scratch(): Promise<Scratch>;
  sandbox(req: SandboxRequest): Promise<SandboxResult>;
  /** Checks out the session's storage binding for one call (src/storage/area.ts). */
  storage?(session: SessionDoc): Promise<StorageMount>;
  memoryMb: number;
}

/** A storage binding checked out into a directory for one call. */
export interface StorageMount {
  dir: string;
  /** Writes changes back; a string says why they were not saved. */
  commit(): Promise<string | null>;
  remove(): Promise<void>;
}

type Found = { session: SessionDoc; version: AgentVersionDoc; tool: ToolDef };

/** Loads what the job names, scoped by the job's org; a string says why it cannot run. */
async function load(deps: ToolRunnerDeps, job: ToolRunJob): Promise<Found | string> {
  const session = await deps.session(job.session_id);
  if (!session || session.org_id !== job.org_id) return `session ${job.session_id} not found`;
  const version = await deps.version(session.org_id, session.version_id);
  if (!version) return `agent version ${session.version_id} not found`;
  const tool = version.tools.find((t) => t.name === job.tool_name);
  if (!tool) return `the agent has no tool named ${JSON.stringify(job.tool_name)}`;
  if (tool.kind !== 'custom') return `tool ${job.tool_name} is not a custom tool`;
  return { session, version, tool };
}

/**
 * Runs one custom tool call: checks the arguments against the tool's
 * input_schema, then runs the handler in the sandbox with the session's
 * declared secrets and its internet access. Anything the tool or the caller
 * got wrong is an error result for the model; only infrastructure failures
 * (database, blob store, disk) throw, so the queue retries them.
 */
/** `signal` is aborted at shutdown: running calls are killed and their jobs retried elsewhere, not reported as failures. */
export async function runToolJob(deps: ToolRunnerDeps, job: ToolRunJob, signal?: AbortSignal, cancel?: AbortSignal): Promise<ToolRunResult> {
  const found = await load(deps, job);
  if (typeof found === 'string') return { ok: false, error: found };
  const { session, version, tool } = found;
  const invalid = checkArguments(tool.input_schema, job.arguments);
  if (invalid) return { ok: false, error: invalid };
  const dir = await deps.versionDir(version);
  const env = await deps.secrets(session, version.manifest.sandbox?.secrets ?? []);
  const scratch = await deps.scratch();
  const storage = session.storage_binding_id && deps.storage ? await deps.storage(session) : null;
  try {
    const result = await deps.sandbox({
      rootDir: dir,
      handlerPath: VersionFiles.fileIn(dir, tool.path),
      args: job.arguments,
      env,
      timeoutMs: tool.timeout_seconds * 1000,
      memoryMb: deps.memoryMb,
      internetAccess: session.internet_access,
      scratchDir: scratch.path,
      storageDir: storage?.dir,
      // Either ends the process: shutdown (the job is retried elsewhere) or the message's cancel.
      signal: signal && cancel ? AbortSignal.any([signal, cancel]) : (signal ?? cancel),
    });
    if (signal?.aborted) throw new Error('the tool-runner is shutting down; the call will be retried');
    // Files persist like a disk's: whatever the call left is saved, also after a failure.
    const refused = storage ? await storage.commit() : null;
    if (refused) return { ok: false, error: result.ok ? refused : `${result.error}; ${refused}` };
    return result.ok ? { ok: true, output: result.output } : { ok: false, error: result.error };
  } finally {
    await scratch.remove();
    await storage?.remove();
  }
}
