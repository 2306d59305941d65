import type { CancelTracker } from '../../src/lib/pubsub/cancels.js';
import { defineActor, DONE } from '../runtime/actor.js';
import { answer, GAVE_UP } from './decide.js';
import { TOOL_RUNNER, type ToolRunJob } from '../../src/domain/actors/tool-runner.js';
import { runToolJob, type ToolRunnerDeps } from './run-tool-job.js';

export type ToolRunnerPorts = ToolRunnerDeps & {
  /** Kills the tool runs of a cancelled message (src/lib/pubsub/cancels.ts). */
  cancels: CancelTracker;
};

/**
 * The tool-runner actor (an activity): runs custom tool calls in the sandbox,
 * a few at a time per process (each is a child process), and answers the
 * session with `tool.completed` (`decide.ts`). When a job exhausts its
 * retries on an infrastructure failure, the model still gets an error result
 * instead of a turn that waits forever. At shutdown running calls are killed
 * (the context's signal) and retried elsewhere.
 */
export const toolRunnerActor = defineActor<ToolRunJob, ToolRunnerPorts>({
  address: TOOL_RUNNER,
  handle: async (ctx, job) => {
    const work = ctx.ports.cancels.track(job.message_id);
    try {
      const result = await runToolJob(ctx.ports, job, ctx.signal, work.signal);
      return result ? answer(job, result, work.signal.aborted) : DONE;
    } finally {
      work.release();
    }
  },
  onGiveUp: async (_ctx, job) => answer(job, GAVE_UP),
  // A tool run that keeps crashing or freezing its worker: the model gets an error result, as for a failed run.
  onQuarantine: async (_ctx, job, error) => answer(job, { ok: false, error }),
});
