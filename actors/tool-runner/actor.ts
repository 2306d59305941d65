import type { CancelTracker } from '../../src/lib/pubsub/cancels.js';
import { defineActor, DONE } from '../runtime/actor.js';
import { answer, GAVE_UP, stepAnswer } from './decide.js';
import { TOOL_RUNNER, type AgentStepJob, type ToolRunJob } from '../../src/domain/actors/tool-runner.js';
import { runToolJob } from './run-tool-job.js';
import { runAgentStep, type AgentStepDeps } from './run-agent-step.js';

export type ToolRunnerPorts = AgentStepDeps & {
  /** Kills the tool runs of a cancelled message (src/lib/pubsub/cancels.ts). */
  cancels: CancelTracker;
};

type Job = ToolRunJob | AgentStepJob;

function isStep(job: Job): job is AgentStepJob {
  return (job as AgentStepJob).kind === 'agent.step';
}

/** What the session hears when a step could not be run at all: the message fails with it, rather than waiting forever. */
function stepFailed(error: string) {
  return { kind: 'failed' as const, emits: [], error };
}

/**
 * The tool-runner actor (an activity): runs tenant code in the sandbox, a few
 * calls at a time per process (each is a child process): custom tool calls,
 * answered with `tool.completed`, and code agents' steps (their run function
 * replayed up to its next ctx calls), answered with `agent.stepped`
 * (`decide.ts`). When a job exhausts its retries on an infrastructure failure,
 * the session still gets an error instead of a turn that waits forever. At
 * shutdown running calls are killed (the context's signal) and retried elsewhere.
 */
export const toolRunnerActor = defineActor<Job, ToolRunnerPorts>({
  address: TOOL_RUNNER,
  handle: async (ctx, job) => {
    const work = ctx.ports.cancels.track(job.message_id);
    try {
      if (isStep(job)) {
        const outcome = await runAgentStep(ctx.ports, job, ctx.signal, work.signal);
        return outcome ? stepAnswer(job, outcome, work.signal.aborted) : DONE;
      }
      const result = await runToolJob(ctx.ports, job, ctx.signal, work.signal);
      return result ? answer(job, result, work.signal.aborted) : DONE;
    } finally {
      work.release();
    }
  },
  onGiveUp: async (_ctx, job) => (isStep(job) ? stepAnswer(job, stepFailed('The agent step could not be run (internal error).')) : answer(job, GAVE_UP)),
  // Work that keeps crashing or freezing its worker: the model gets an error result, a code agent's message fails.
  onQuarantine: async (_ctx, job, error) => (isStep(job) ? stepAnswer(job, stepFailed(error)) : answer(job, { ok: false, error })),
});
