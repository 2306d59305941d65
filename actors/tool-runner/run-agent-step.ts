import type { EventEnvelope, MessageState } from '../../src/domain/ledger.js';
import { checkStepOutcome, type StepOutcome } from '../../src/domain/session/code-step.js';
import { journalOf } from '../../src/domain/session/journal.js';
import { VersionFiles, type Scratch } from '../../src/lib/sandbox/version-files.js';
import type { AgentStepJob } from '../../src/domain/actors/tool-runner.js';
import { planStep, stepInput } from './decide.js';
import type { ToolRunnerDeps } from './run-tool-job.js';

/** What a step needs besides a tool run's ports: the message's ledger events (its journal) and the session's earlier messages. */
export interface AgentStepDeps extends ToolRunnerDeps {
  /** The ledger events of the session from `afterSequence` on, in order. */
  events(sessionId: string, afterSequence: number): Promise<EventEnvelope[]>;
  history(orgId: string, sessionId: string): Promise<MessageState[]>;
  /** Wall clock of one step (the run up to its next calls). */
  stepTimeoutMs: number;
}

/**
 * Runs one step of a code agent: loads its session, version and message, lets `planStep` decide, reads the
 * message's journal from the ledger, and runs the entrypoint's run function in the sandbox under the same rules
 * as the agent's tools (declared secrets, internet access, memory, a fresh scratch folder). Null when the step is
 * stale (nothing ran). Only infrastructure failures throw, so the queue retries them.
 */
export async function runAgentStep(deps: AgentStepDeps, job: AgentStepJob, signal?: AbortSignal, cancel?: AbortSignal): Promise<StepOutcome | null> {
  const session = await deps.session(job.session_id);
  const ok = !!session && session.org_id === job.org_id;
  const [version, message] = ok ? await Promise.all([deps.version(session.org_id, session.version_id), deps.message(session.org_id, session._id, job.message_id)]) : [null, null];
  const step = planStep(job, ok ? session : null, version, message);
  if (step.kind === 'fail') return { kind: 'failed', emits: [], error: step.error };
  if (step.kind === 'stale') return null;
  const [events, history] = await Promise.all([deps.events(step.session._id, step.message.sequence_number - 1), deps.history(step.session.org_id, step.session._id)]);
  const journal = journalOf(events, step.message.id);
  const files = await deps.versionDir(step.version);
  let scratch: Scratch | null = null;
  try {
    const env = await deps.secrets(step.session, step.secrets);
    scratch = await deps.scratch();
    const result = await deps.sandbox({
      rootDir: files.dir,
      handlerPath: VersionFiles.fileIn(files.dir, step.file),
      exportName: step.export_name,
      agentStep: true,
      args: stepInput(step.message, history, journal),
      env,
      timeoutMs: deps.stepTimeoutMs,
      memoryMb: deps.memoryMb,
      internetAccess: step.internet_access,
      allowedDomains: step.allowed_domains,
      scratchDir: scratch.path,
      signal: signal && cancel ? AbortSignal.any([signal, cancel]) : (signal ?? cancel),
    });
    if (signal?.aborted) throw new Error('the tool-runner is shutting down; the step will be retried');
    if (!result.ok) return { kind: 'failed', emits: [], error: `The agent's run failed (${result.kind}): ${result.error}` };
    return checkStepOutcome(result.output, job.at);
  } finally {
    files.release();
    await scratch?.remove();
  }
}
