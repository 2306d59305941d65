import type { EventEnvelope, MessageState } from '../../src/domain/ledger.js';
import { checkStepOutcome, transcriptUsed, wantsTranscript, type StepOutcome } from '../../src/domain/session/code-step.js';
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
  /** Whether this message's run has called ctx.transcript(): only then do its steps read `history`. */
  transcriptWanted(messageId: string): Promise<boolean>;
  /** Records that it has, for the message's later steps (whichever tool-runner runs them). */
  wantTranscript(messageId: string): Promise<void>;
  /** Wall clock of one step (the run up to its next calls). */
  stepTimeoutMs: number;
}

/**
 * Runs one step of a code agent: loads its session, version and message, lets `planStep` decide, reads the
 * message's journal from the ledger (and the session's earlier messages at its first step, and at later ones once its
 * run has called ctx.transcript()), and runs the entrypoint's run function in the sandbox under the same rules
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
  const { org_id: orgId, _id: sessionId } = step.session;
  const [events, earlier] = await Promise.all([
    deps.events(sessionId, step.message.sequence_number - 1),
    // The first step (of each attempt) is sent it, as most runs that call ctx.transcript() call it before anything else.
    (job.at === 0 ? Promise.resolve(true) : deps.transcriptWanted(step.message.id)).then((wanted) => (wanted ? deps.history(orgId, sessionId) : null)),
  ]);
  let history = earlier;
  const journal = journalOf(events, step.message.id);
  const files = await deps.versionDir(step.version);
  let scratch: Scratch | null = null;
  try {
    const env = await deps.secrets(step.session, step.secrets);
    const run = async () => {
      // A fresh scratch folder per run, as for every step: a step run again after asking for its transcript starts clean.
      const used: Scratch | null = scratch;
      scratch = null;
      await used?.remove();
      scratch = await deps.scratch();
      return deps.sandbox({
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
    };
    let result = await run();
    if (result.ok && history === null && wantsTranscript(result.output)) {
      // Once per message: its later steps are sent the transcript (a replay calls ctx.transcript() again).
      await deps.wantTranscript(step.message.id);
      history = await deps.history(orgId, sessionId);
      result = await run();
    } else if (result.ok && job.at === 0 && transcriptUsed(result.output)) {
      await deps.wantTranscript(step.message.id);
    }
    if (signal?.aborted) throw new Error('the tool-runner is shutting down; the step will be retried');
    if (!result.ok) return { kind: 'failed', emits: [], error: `The agent's run failed (${result.kind}): ${result.error}` };
    return checkStepOutcome(result.output, job.at);
  } finally {
    files.release();
    await (scratch as Scratch | null)?.remove();
  }
}
