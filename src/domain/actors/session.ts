import { createHash, randomUUID } from 'node:crypto';
import type { ContentBlock } from '../ledger.js';
import type { OnBusy } from '../session/on-busy.js';
import type { EventData } from '../event-data.js';
import { actorAddress, safeJobId, type Priority, type ReplyTo, type Send } from './address.js';
import type { BatchChildSettled } from './batch.js';
import type { AgentStepJob, ToolRunJob } from './tool-runner.js';
import type { AgentCallResult, StepOutcome } from '../session/code-step.js';
import type { WebhookJob } from './webhook.js';

/**
 * Commands the session actor accepts. Every command carries a `command_id`:
 * the runtime records it on the events it produced, so a redelivered command
 * is recognised and not applied twice.
 */
export type SessionCommand =
  | {
      kind: 'user.message';
      command_id: string;
      message_id: string;
      content: ContentBlock[];
      metadata: Record<string, string> | null;
      /** `deferred`: record it queued and start it in a turn of its own (batch children wait behind interactive work). */
      start?: 'now' | 'deferred';
      /** What it does when the session is busy (on-busy.ts); absent: the session's default, else `enqueue`. */
      on_busy?: OnBusy;
    }
  | { kind: 'tool.result_submitted'; command_id: string; message_id: string; tool_call_id: string; result: unknown; is_error: boolean }
  /** The client's answer to a `tool.confirmation_requested` (`user.tool_confirmation`). */
  | { kind: 'tool.confirmation'; command_id: string; message_id: string; tool_call_id: string; result: 'allow' | 'deny'; deny_message?: string }
  /** A confirmation nobody gave by its `expires_at` (sent delayed when it is requested). */
  | { kind: 'tool.confirmation_expired'; command_id: string; message_id: string; attempt: number; tool_call_id: string }
  | { kind: 'message.start'; command_id: string; message_id: string }
  | { kind: 'message.cancel'; command_id: string; message_id: string }
  | { kind: 'model.responded'; command_id: string; message_id: string; attempt: number; call_index: number; result: ModelResult }
  | { kind: 'tool.completed'; command_id: string; message_id: string; attempt: number; tool_call_id: string; result: ToolRunResult }
  | { kind: 'tool.deadline_passed'; command_id: string; message_id: string; attempt: number; tool_call_id: string }
  | { kind: 'webhook.delivery_failed'; command_id: string; message_id: string | null; delivery: WebhookFailure }
  /** A code agent's step ran (the tool-runner): what the run function did up to its first unjournaled calls. `at`: the journal length it saw. */
  | { kind: 'agent.stepped'; command_id: string; message_id: string; attempt: number; at: number; outcome: StepOutcome }
  /** A code agent's model call or sleep at `position` ended. */
  | { kind: 'agent.call_done'; command_id: string; message_id: string; attempt: number; position: number; result: AgentCallResult; call_attempt?: number }
  /** From the runtime, never sent: a command of this message was poison work (onQuarantine); the message fails with `error`. */
  | { kind: 'message.quarantine'; command_id: string; message_id: string; error: string }
  /** From the stranded-work sweeper: issue again whatever the session waits on (see outstanding.ts). Appends nothing. */
  | { kind: 'session.resume'; command_id: string }
  /** Deletes the session and its records; handled by the runtime (delete.ts), never decided. */
  | { kind: 'session.delete'; command_id: string };

/** What the tool-runner actor reports for one custom tool call. */
export type ToolRunResult = { ok: true; output: unknown } | { ok: false; error: string };

/** Recorded as `webhook.delivery_failed` when a delivery exhausts its retries. */
export type WebhookFailure = EventData['webhook.delivery_failed'];

/** What a model answers with: text and tool-call parts, and why it stopped, as `assistant.message_completed` records them. */
export type ModelAnswer = Pick<EventData['assistant.message_completed'], 'parts' | 'stop_reason'>;

/** What the router-proxy actor reports back for one model call. */
export type ModelResult =
  | { ok: true; parts: ModelAnswer['parts']; stop_reason: ModelAnswer['stop_reason']; usage: { input_tokens: number; output_tokens: number } | null; budget_thresholds?: EventData['budget.threshold_reached'][] }
  | { ok: false; error: string; retryable?: boolean; retry_after_ms?: number; code?: string };

/** A model call handed to the router-proxy actor. */
export interface ModelCall {
  org_id: string;
  session_id: string;
  message_id: string;
  attempt: number;
  call_index: number;
  /** The session's version and llm option, so a scripted call needs no session read. */
  version_id?: string;
  llm_id?: string;
  /** The session's priority, which its answer keeps. */
  priority?: Priority;
  /** A code agent's `ctx.model` call: its journal position and the request the run made (the answer is an `agent.call_done`). */
  position?: number;
  request?: Record<string, unknown>;
  /** A code agent's model call: which try of the call at `position` this is (1 when absent); a retryable failure tries again. */
  call_attempt?: number;
}

/** Side effects a decision asks the runtime to carry out after the append. */
export type Effect =
  | { kind: 'model.call'; job_id: string; call: ModelCall; delay_ms?: number }
  | { kind: 'session.command'; command: SessionCommand; delay_ms?: number }
  | { kind: 'tool.run'; job_id: string; job: ToolRunJob }
  /** Runs a code agent's function once more, replaying its journal, up to its next unjournaled calls (the tool-runner). */
  | { kind: 'agent.step'; job_id: string; job: AgentStepJob }
  | { kind: 'webhook'; job_id: string; job: WebhookJob }
  | { kind: 'batch.child_settled'; job_id: string; job: BatchChildSettled }
  /** Stop the message's work in flight (model calls, custom tools): published on the cancel channel, not sent. */
  | { kind: 'work.abort'; message_id: string };

/** A code agent's model call past its first try: ids of its job and answer name the try (the first keeps its id). */
function tryTag(callAttempt: number | undefined): string {
  return callAttempt && callAttempt > 1 ? `-a${callAttempt}` : '';
}

export function modelCallJobId(call: Omit<ModelCall, 'org_id' | 'session_id'>): string {
  if (call.position !== undefined) return `model-${call.message_id}-${call.attempt}-p${call.position}${tryTag(call.call_attempt)}`;
  return `model-${call.message_id}-${call.attempt}-${call.call_index}`;
}

/** The session actor: keyed by session id, so a session's commands run one at a time. */
export const SESSION = actorAddress('session', { keyed: true, attempts: 8 });

/** A session actor's job: the command, and who asked (the runtime answers them). */
export interface SessionJob {
  session_id: string;
  command: SessionCommand;
  reply_to?: ReplyTo;
}

/** The job id is the command id, so a retried send is still one job. */
export function sessionCommand(sessionId: string, command: SessionCommand, priority: Priority = 'interactive', delayMs?: number): Send {
  const data: SessionJob = { session_id: sessionId, command };
  return { to: SESSION, key: sessionId, name: command.kind, data, job_id: sessionJobId(sessionId, command.command_id), priority, ...(delayMs ? { delay_ms: delayMs } : {}) };
}

/*
 * Every session command's id is built below, from what the command is about: a command sent again (a retry,
 * a replayed turn, the sweeper's resume) is then the same command and the same job, which is what deduplicates
 * it. A builder is the only place its id is spelled.
 */

/** Starts a queued message in a turn of its own (a deferred start). */
export function messageStart(messageId: string): SessionCommand {
  return { kind: 'message.start', command_id: `start-${messageId}`, message_id: messageId };
}

/** Fails an external tool call whose result did not come in time (sent delayed when the call is requested). */
export function deadlinePassed(message: { id: string; attempt: number }, toolCallId: string): Extract<SessionCommand, { kind: 'tool.deadline_passed' }> {
  return { kind: 'tool.deadline_passed', command_id: `deadline-${message.id}-${message.attempt}-${toolCallId}`, message_id: message.id, attempt: message.attempt, tool_call_id: toolCallId };
}

/** Fails an `always_ask` call nobody confirmed in time; its own id, so the external deadline an allowed call gets later is not taken for it. */
export function confirmationExpired(message: { id: string; attempt: number }, toolCallId: string): Extract<SessionCommand, { kind: 'tool.confirmation_expired' }> {
  return { kind: 'tool.confirmation_expired', command_id: `confirm-deadline-${message.id}-${message.attempt}-${toolCallId}`, message_id: message.id, attempt: message.attempt, tool_call_id: toolCallId };
}

/** A digest of a client's idempotency key, short enough for a job id. */
function keyDigest(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 32);
}

/**
 * A user message's command id: its Idempotency-Key's, when the client sent one, so that a retry that reaches the actor
 * (a claim taken over after its request died) is recognised as the message the session already has; else the message's.
 */
export function userMessageCommandId(messageId: string, idempotencyKey: string | null = null): string {
  return idempotencyKey ? `um-${keyDigest(idempotencyKey)}` : `um-${messageId}`;
}

/** A submitted tool result's command id: its Idempotency-Key's, else one of its own. */
export function toolResultCommandId(idempotencyKey: string | null): string {
  return idempotencyKey ? `tr-${keyDigest(idempotencyKey)}` : `tr-${randomUUID()}`;
}

/** A client's tool confirmation's command id: like a tool result's, so a second answer reaches the actor and is refused (409). */
export function toolConfirmationCommandId(idempotencyKey: string | null): string {
  return idempotencyKey ? `tc-${keyDigest(idempotencyKey)}` : `tc-${randomUUID()}`;
}

/** A client's cancel of a message: one command however often it is asked. */
export function messageCancel(messageId: string): Extract<SessionCommand, { kind: 'message.cancel' }> {
  return { kind: 'message.cancel', command_id: `cancel-${messageId}`, message_id: messageId };
}

/** Deletes a session: on a client's request (named by its request id), or when its retention ran out (once). */
export function sessionDelete(by: { request: string } | { retention: string }): Extract<SessionCommand, { kind: 'session.delete' }> {
  return { kind: 'session.delete', command_id: 'request' in by ? `delete-${by.request}` : `retention-${by.retention}` };
}

/** The sweeper's resume: one per session and ledger position, so sweeps that race enqueue it once. */
export function sessionResume(lastSequence: number): Extract<SessionCommand, { kind: 'session.resume' }> {
  return { kind: 'session.resume', command_id: `resume-${lastSequence}` };
}

/** Fails the message of a command that was poison work, in its place. */
export function messageQuarantine(command: { command_id: string }, messageId: string, error: string): Extract<SessionCommand, { kind: 'message.quarantine' }> {
  return { kind: 'message.quarantine', command_id: `quarantine-${command.command_id}`, message_id: messageId, error };
}

/** Records a webhook delivery that ended without success; its id is the delivery's, so a repeated report is one command. */
export function deliveryFailed(messageId: string | null, delivery: WebhookFailure): Extract<SessionCommand, { kind: 'webhook.delivery_failed' }> {
  return { kind: 'webhook.delivery_failed', command_id: `whf-${delivery.delivery_id}`, message_id: messageId, delivery };
}

/** The `model.responded` command that carries a model call's answer back to the session. */
export function modelAnswerCommandId(call: Omit<ModelCall, 'org_id' | 'session_id'>): string {
  // A code agent's call is answered by an agent.call_done: the sweeper must look for that one, or it takes a call whose answer waits for lost.
  if (call.position !== undefined) return agentCallDoneId({ id: call.message_id, attempt: call.attempt }, call.position, 'model', call.call_attempt);
  return `resp-${call.message_id}-${call.attempt}-${call.call_index}`;
}

/** The answer to a code agent's model call at `position`. */
function agentCallDoneId(message: { id: string; attempt: number }, position: number, by: 'model' | 'sleep', callAttempt = 1): string {
  return `${by === 'model' ? 'agentres' : 'sleep'}-${message.id}-${message.attempt}-${position}${tryTag(callAttempt)}`;
}

export function agentCallDone(message: { id: string; attempt: number }, position: number, result: AgentCallResult, by: 'model' | 'sleep', callAttempt = 1): Extract<SessionCommand, { kind: 'agent.call_done' }> {
  const command_id = agentCallDoneId(message, position, by, callAttempt);
  return { kind: 'agent.call_done', command_id, message_id: message.id, attempt: message.attempt, position, result, ...(callAttempt > 1 ? { call_attempt: callAttempt } : {}) };
}

/** The result of a code agent's step at journal length `at`. */
export function agentStepped(job: { message_id: string; attempt: number; at: number }, outcome: StepOutcome): Extract<SessionCommand, { kind: 'agent.stepped' }> {
  return { kind: 'agent.stepped', command_id: `stepped-${job.message_id}-${job.attempt}-${job.at}`, message_id: job.message_id, attempt: job.attempt, at: job.at, outcome };
}

/** A session command's job id: the command id, so a retried send is still one job. */
export function sessionJobId(sessionId: string, commandId: string): string {
  return safeJobId(`${sessionId}.${commandId}`);
}
