import { actorAddress, safeJobId, type Priority } from './address.js';

/**
 * Jobs of the tool-runner actor (queue `tool-runner`): run one custom tool
 * call in the sandbox and report back to the session actor with a
 * `tool.completed` command. Orgs take turns on the queue (`shareBy`), so
 * one org's backlog of calls does not hold back another's.
 */
export const TOOL_RUNNER = actorAddress('tool-runner', { attempts: 8, shareBy: 'org_id' });

export interface ToolRunJob {
  org_id: string;
  session_id: string;
  message_id: string;
  attempt: number;
  tool_call_id: string;
  tool_name: string;
  arguments: Record<string, unknown>;
  /** The session's priority, which the result keeps. */
  priority?: Priority;
}

/**
 * A code agent's step, also run by the tool-runner (it runs tenant code in the sandbox): the message's run function
 * replayed against its journal of `at` positions. Answered with an `agent.stepped` session command.
 */
export interface AgentStepJob {
  kind: 'agent.step';
  org_id: string;
  session_id: string;
  message_id: string;
  attempt: number;
  at: number;
  priority?: Priority;
}

export function agentStepJobId(job: Pick<AgentStepJob, 'message_id' | 'attempt' | 'at'>): string {
  return safeJobId(`step-${job.message_id}-${job.attempt}-${job.at}`);
}

export function toolRunJobId(job: Pick<ToolRunJob, 'message_id' | 'attempt' | 'tool_call_id'>): string {
  return safeJobId(`tool-${job.message_id}-${job.attempt}-${job.tool_call_id}`);
}

/** The `tool.completed` command that carries a tool run's result back to the session. */
export function toolAnswerCommandId(job: Pick<ToolRunJob, 'message_id' | 'attempt' | 'tool_call_id'>): string {
  return `toolres-${job.message_id}-${job.attempt}-${job.tool_call_id}`;
}
