import type { CancelTracker } from '../../src/pubsub/cancels.js';
import { DONE, defineActor, type Outcome } from '../runtime/actor.js';
import { sessionCommand, type ToolRunResult } from '../session/messages.js';
import { TOOL_RUNNER, toolAnswerCommandId, type ToolRunJob } from './messages.js';
import { runToolJob, type ToolRunnerDeps } from './run-tool-job.js';

export type ToolRunnerPorts = ToolRunnerDeps & {
  /** Kills the tool runs of a cancelled message (src/pubsub/cancels.ts). */
  cancels: CancelTracker;
};

/** The session hears the outcome as `tool.completed`; the command id makes a redelivered job one command. */
function report(job: ToolRunJob, result: ToolRunResult): Outcome {
  const command_id = toolAnswerCommandId(job);
  return { sends: [sessionCommand(job.session_id, { kind: 'tool.completed', command_id, message_id: job.message_id, attempt: job.attempt, tool_call_id: job.tool_call_id, result }, job.priority)] };
}

/**
 * The tool-runner actor (an activity): runs custom tool calls in the sandbox,
 * a few at a time per process (each is a child process). When a job exhausts
 * its retries on an infrastructure failure, the model still gets an error
 * result instead of a turn that waits forever. At shutdown running calls are
 * killed (the context's signal) and retried elsewhere.
 */
export const toolRunnerActor = defineActor<ToolRunJob, ToolRunnerPorts>({
  address: TOOL_RUNNER,
  handle: async (ctx, job) => {
    const work = ctx.ports.cancels.track(job.message_id);
    try {
      const result = await runToolJob(ctx.ports, job, ctx.signal, work.signal);
      // Killed because its message was cancelled: the session already failed the call.
      return work.signal.aborted ? DONE : report(job, result);
    } finally {
      work.release();
    }
  },
  onGiveUp: async (_ctx, job) => report(job, { ok: false, error: 'The tool could not be run (internal error).' }),
});
