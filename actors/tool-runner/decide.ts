import { pendingCall, type MessageState } from '../../src/domain/ledger.js';
import type { AgentVersionDoc } from '../../src/store/agents.js';
import type { McpServerEntry, ToolDef } from '../../src/domain/agent.js';
import type { SessionDoc } from '../../src/domain/views/session.js';
import { DONE, type Outcome } from '../runtime/actor.js';
import { agentStepped, sessionCommand, type ToolRunResult } from '../../src/domain/actors/session.js';
import type { StepOutcome } from '../../src/domain/session/code-step.js';
import type { JournalEntry } from '../../src/domain/session/journal.js';
import { inHistory } from '../../src/domain/session/history.js';
import { checkArguments } from './input-check.js';
import { toolAnswerCommandId, type AgentStepJob, type ToolRunJob } from '../../src/domain/actors/tool-runner.js';

/**
 * The tool-runner's decisions, pure so unit tests call them directly: before
 * the sandbox run (run what, or an error result for the model) and after it
 * (what the session hears). The run itself is the activity's own work
 * (`run-tool-job.ts`).
 */

/**
 * A job's plan: what to run (`Run`, one or more kinds), or why it cannot run (`fail`: the model gets that as an
 * error result, or the message fails with it), or nothing (`stale`: the call or step no longer waits, because its
 * message ended, was cancelled or moved on; nothing runs, nothing is sent).
 */
export type Plan<Run extends { kind: string }> = { kind: 'fail'; error: string } | { kind: 'stale' } | Run;

/** The sandbox run a tool-run job asks for, or a remote MCP server's call. */
export type ToolPlan = Plan<
  | {
      kind: 'run';
      session: SessionDoc;
      version: AgentVersionDoc;
      tool: ToolDef;
      /** The secrets the version declares for its sandbox; only these are revealed to the call. */
      secrets: readonly string[];
      timeout_ms: number;
      internet_access: boolean;
      /** The manifest's `sandbox.allowed_domains`: the hosts the egress proxy lets the call reach; absent = any public host. */
      allowed_domains?: readonly string[];
      /** The session has a storage binding: its files are checked out for the call and saved after. */
      mount_storage: boolean;
    }
  /** A remote MCP server's tool: called from here, not from the sandbox (docs/mcp.md). */
  | { kind: 'mcp'; session: SessionDoc; server: McpServerEntry; tool: string; timeout_ms: number }
>;

/** Whether the job's org owns the session (only then is its version read). */
export function ownsSession(job: Pick<ToolRunJob, 'org_id'>, session: SessionDoc | null): session is SessionDoc {
  return !!session && session.org_id === job.org_id;
}

/**
 * What to run for the job, given its session, that session's version and the
 * job's message (null when not there or not read). A call that no longer
 * waits is not run: a cancelled message's queued tool would otherwise still
 * run, with its side effects and its storage writes. The message is read,
 * not the session: messages are written before a turn hands off, so one that
 * says the call waits is never behind the job. Anything the tool or the caller
 * got wrong is an error result for the model, never a retry.
 */
export function plan(job: ToolRunJob, session: SessionDoc | null, version: AgentVersionDoc | null, message: MessageState | null): ToolPlan {
  if (!ownsSession(job, session)) return { kind: 'fail', error: `session ${job.session_id} not found` };
  if (!pendingCall(message ?? undefined, job.attempt, job.tool_call_id)) return { kind: 'stale' };
  if (!version) return { kind: 'fail', error: `agent version ${session.version_id} not found` };
  const tool = version.tools.find((t) => t.name === job.tool_name);
  if (!tool) return { kind: 'fail', error: `the agent has no tool named ${JSON.stringify(job.tool_name)}` };
  if (tool.kind !== 'custom') return { kind: 'fail', error: `tool ${job.tool_name} is not a custom tool` };
  const invalid = checkArguments(tool.input_schema, job.arguments);
  if (invalid) return { kind: 'fail', error: invalid };
  if (tool.mcp) {
    const server = version.manifest.mcp_servers?.find((s) => s.name === tool.mcp!.server);
    if (!server) return { kind: 'fail', error: `the agent has no MCP server named ${JSON.stringify(tool.mcp.server)}` };
    return { kind: 'mcp', session, server, tool: tool.mcp.tool, timeout_ms: tool.timeout_seconds * 1000 };
  }
  return {
    kind: 'run',
    session,
    version,
    tool,
    secrets: version.manifest.sandbox?.secrets ?? [],
    timeout_ms: tool.timeout_seconds * 1000,
    internet_access: session.internet_access,
    ...(version.manifest.sandbox?.allowed_domains ? { allowed_domains: version.manifest.sandbox.allowed_domains } : {}),
    mount_storage: !!session.storage_binding_id,
  };
}

/**
 * The call's result from the sandbox's and the storage's: files persist like
 * a disk's, so a refused save fails even a successful call, and adds to a
 * failed call's error.
 */
export function toolResult(result: { ok: true; output: unknown } | { ok: false; error: string }, storageRefused: string | null): ToolRunResult {
  if (storageRefused) return { ok: false, error: result.ok ? storageRefused : `${result.error}; ${storageRefused}` };
  return result.ok ? { ok: true, output: result.output } : { ok: false, error: result.error };
}

/** What the session hears when a job exhausted its retries on an infrastructure failure: an error for the model, not a turn waiting forever. */
export const GAVE_UP: ToolRunResult = Object.freeze({ ok: false, error: 'The tool could not be run (internal error).' });

/**
 * The answer to the session: a `tool.completed` command whose id makes a
 * redelivered job one command; nothing when the message was cancelled while
 * the tool ran (the session already failed the call).
 */
export function answer(job: ToolRunJob, result: ToolRunResult, cancelled = false): Outcome {
  if (cancelled) return DONE;
  const command_id = toolAnswerCommandId(job);
  return { sends: [sessionCommand(job.session_id, { kind: 'tool.completed', command_id, message_id: job.message_id, attempt: job.attempt, tool_call_id: job.tool_call_id, result }, job.priority)] };
}

/** A code agent's step to run. */
export type StepPlan = Plan<{
  kind: 'run';
  session: SessionDoc;
  version: AgentVersionDoc;
  message: MessageState;
  /** The entrypoint's module path in the archive, and its export. */
  file: string;
  export_name: string;
  secrets: readonly string[];
  internet_access: boolean;
  allowed_domains?: readonly string[];
}>;

/**
 * Whether the step still stands: its message runs, at its attempt, with the journal length the step was issued
 * for and nothing in flight. Anything else means the session moved on (a cancel, a redelivered job).
 */
export function planStep(job: AgentStepJob, session: SessionDoc | null, version: AgentVersionDoc | null, message: MessageState | null): StepPlan {
  if (!session) return { kind: 'fail', error: `session ${job.session_id} not found` };
  if (!message || message.status !== 'running' || message.attempt !== job.attempt || (message.agent?.positions ?? 0) !== job.at) return { kind: 'stale' };
  if (message.pending_tool_calls.length > 0 || message.agent?.pending.length) return { kind: 'stale' };
  if (!version) return { kind: 'fail', error: `agent version ${session.version_id} not found` };
  if (!version.agent_config?.code) return { kind: 'fail', error: 'The agent version has no run function.' };
  const at = version.entrypoint.lastIndexOf(':');
  return {
    kind: 'run',
    session,
    version,
    message,
    file: version.entrypoint.slice(0, at),
    export_name: version.entrypoint.slice(at + 1),
    secrets: version.manifest.sandbox?.secrets ?? [],
    internet_access: session.internet_access,
    ...(version.manifest.sandbox?.allowed_domains ? { allowed_domains: version.manifest.sandbox.allowed_domains } : {}),
  };
}

function textOf(parts: readonly { type: string; text?: string }[]): string {
  return parts.flatMap((p) => (p.type === 'text' && typeof p.text === 'string' ? [p.text] : [])).join('\n');
}

/**
 * What the run function sees: `input` (the message's text), `ctx.message` (its parts and metadata), `ctx.transcript()`
 * (the session's earlier turns in the model's history, as user and assistant text), and the journal to replay.
 * `history` is null for a message whose run has not asked for its transcript: none is sent (code-step.ts wantsTranscript).
 */
export function stepInput(m: MessageState, history: readonly MessageState[] | null, journal: JournalEntry[]) {
  const message = { id: m.id, parts: m.parts, metadata: m.metadata };
  if (history === null) return { input: textOf(m.parts), message, journal };
  const transcript = history
    .filter((h) => h.sequence_number < m.sequence_number && inHistory(h))
    // A turn interrupted before any text (on_busy interrupt) has no assistant entry, as the built-in loop's history has no item for it.
    .flatMap((h) => [{ role: 'user', text: textOf(h.parts) }, ...(textOf(h.output.parts) ? [{ role: 'assistant', text: textOf(h.output.parts) }] : [])]);
  return { input: textOf(m.parts), message, transcript, journal };
}

/** The step's outcome for the session: an `agent.stepped` command, one per journal length; nothing after a cancel. */
export function stepAnswer(job: AgentStepJob, outcome: StepOutcome, cancelled = false): Outcome {
  if (cancelled) return DONE;
  return { sends: [sessionCommand(job.session_id, agentStepped(job, outcome), job.priority)] };
}
