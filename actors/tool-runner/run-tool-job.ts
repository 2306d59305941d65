import type { MessageState } from '../../src/domain/ledger.js';
import type { SandboxRequest, SandboxResult } from '../../src/lib/sandbox/types.js';
import { VersionFiles, type Scratch, type VersionLease } from '../../src/lib/sandbox/version-files.js';
import type { AgentVersionDoc } from '../../src/store/agents.js';
import type { ToolRunResult } from '../../src/domain/actors/session.js';
import type { SessionDoc } from '../../src/domain/views/session.js';
import { ownsSession, plan, toolResult } from './decide.js';
import type { ToolRunJob } from '../../src/domain/actors/tool-runner.js';
import type { McpCaller } from './mcp-call.js';
import { inSpan } from '../../src/lib/telemetry/tracing.js';

/** What running one job needs; the worker wires real stores, tests may wire their own. */
export interface ToolRunnerDeps {
  session(id: string): Promise<SessionDoc | null>;
  /** The message a call belongs to, as its session's turns last wrote it. */
  message(orgId: string, sessionId: string, id: string): Promise<MessageState | null>;
  version(orgId: string, versionId: string): Promise<AgentVersionDoc | null>;
  secrets(session: SessionDoc, declared: readonly string[]): Promise<Record<string, string>>;
  /** The version's files, held (not evicted) until released. */
  versionDir(version: AgentVersionDoc): Promise<VersionLease>;
  scratch(): Promise<Scratch>;
  sandbox(req: SandboxRequest): Promise<SandboxResult>;
  /** Checks out the session's storage binding for one call (src/app/storage-area.ts). */
  storage?(session: SessionDoc): Promise<StorageMount>;
  memoryMb: number;
  /** Calls remote MCP servers' tools; absent where none may be reached (such a call is an error result). */
  mcp?: McpCaller;
}

/** A storage binding checked out into a directory for one call. */
export interface StorageMount {
  dir: string;
  /** Writes changes back; a string says why they were not saved. */
  commit(): Promise<string | null>;
  remove(): Promise<void>;
}

/**
 * Runs one custom tool call: loads the job's session and version, lets
 * `plan` decide (the arguments are checked against the tool's input_schema
 * there), then runs the handler in the sandbox with the session's declared
 * secrets and its internet access, and lets `toolResult` decide what the
 * model gets; null when the call no longer waits (nothing ran). Only
 * infrastructure failures (database, blob store, disk) throw, so the queue
 * retries them. `signal` is aborted at shutdown: running calls
 * are killed and their jobs retried elsewhere, not reported as failures.
 */
export async function runToolJob(deps: ToolRunnerDeps, job: ToolRunJob, signal?: AbortSignal, cancel?: AbortSignal): Promise<ToolRunResult | null> {
  const session = await deps.session(job.session_id);
  const [version, message] = ownsSession(job, session) ? await Promise.all([deps.version(session.org_id, session.version_id), deps.message(session.org_id, session._id, job.message_id)]) : [null, null];
  const step = plan(job, session, version, message);
  if (step.kind === 'fail') return { ok: false, error: step.error };
  if (step.kind === 'stale') return null;
  if (step.kind === 'mcp') {
    if (!deps.mcp) return { ok: false, error: 'MCP tools cannot be called on this deployment.' };
    const result = await deps.mcp.call(step.session.org_id, step.server, step.tool, job.arguments, step.timeout_ms, signal && cancel ? AbortSignal.any([signal, cancel]) : (signal ?? cancel));
    if (signal?.aborted) throw new Error('the tool-runner is shutting down; the call will be retried');
    return result;
  }
  const files = await deps.versionDir(step.version);
  const dir = files.dir;
  let scratch: Scratch | null = null;
  let storage: StorageMount | null = null;
  try {
    const env = await deps.secrets(step.session, step.secrets);
    const scratchDir = (scratch = await deps.scratch()).path;
    storage = step.mount_storage && deps.storage ? await deps.storage(step.session) : null;
    // The tool run's span (GenAI `execute_tool`): never its arguments, its output or the secrets it was given.
    const attrs = { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': job.tool_name, 'gen_ai.tool.call.id': job.tool_call_id, 'gen_ai.tool.type': 'function' };
    const result = await inSpan(`execute_tool ${job.tool_name}`, 'internal', attrs, () => deps.sandbox({
      rootDir: dir,
      handlerPath: VersionFiles.fileIn(dir, step.tool.path),
      args: job.arguments,
      env,
      timeoutMs: step.timeout_ms,
      memoryMb: deps.memoryMb,
      internetAccess: step.internet_access,
      allowedDomains: step.allowed_domains,
      scratchDir,
      storageDir: storage?.dir,
      // Either ends the process: shutdown (the job is retried elsewhere) or the message's cancel.
      signal: signal && cancel ? AbortSignal.any([signal, cancel]) : (signal ?? cancel),
    }));
    // Killed by the shutdown, not by the tool: not the call's result, and nothing of it is saved.
    if (signal?.aborted) throw new Error('the tool-runner is shutting down; the call will be retried');
    // Files persist like a disk's: whatever the call left is saved, also after a failure.
    return toolResult(result, storage ? await storage.commit() : null);
  } finally {
    files.release();
    await scratch?.remove();
    await storage?.remove();
  }
}
