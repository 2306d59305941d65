import type { ContentBlock, EventData, OutputPart } from '../ledger.js';
import { actorAddress, safeJobId, type Priority, type ReplyTo, type Send } from './address.js';
import type { BatchChildSettled } from './batch.js';
import type { ToolRunJob } from './tool-runner.js';
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
    }
  | { kind: 'tool.result_submitted'; command_id: string; message_id: string; tool_call_id: string; result: unknown; is_error: boolean }
  | { kind: 'message.start'; command_id: string; message_id: string }
  | { kind: 'message.cancel'; command_id: string; message_id: string }
  | { kind: 'model.responded'; command_id: string; message_id: string; attempt: number; call_index: number; result: ModelResult }
  | { kind: 'tool.completed'; command_id: string; message_id: string; attempt: number; tool_call_id: string; result: ToolRunResult }
  | { kind: 'tool.deadline_passed'; command_id: string; message_id: string; attempt: number; tool_call_id: string }
  | { kind: 'webhook.delivery_failed'; command_id: string; message_id: string | null; delivery: WebhookFailure }
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

/** What the router-proxy actor reports back for one model call. */
export type ModelResult =
  | { ok: true; parts: OutputPart[]; stop_reason: string; usage: { input_tokens: number; output_tokens: number } | null }
  | { ok: false; error: string; retryable?: boolean; retry_after_ms?: number };

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
}

/** Side effects a decision asks the runtime to carry out after the append. */
export type Effect =
  | { kind: 'model.call'; job_id: string; call: ModelCall; delay_ms?: number }
  | { kind: 'session.command'; command: SessionCommand; delay_ms?: number }
  | { kind: 'tool.run'; job_id: string; job: ToolRunJob }
  | { kind: 'webhook'; job_id: string; job: WebhookJob }
  | { kind: 'batch.child_settled'; job_id: string; job: BatchChildSettled }
  /** Stop the message's work in flight (model calls, custom tools): published on the cancel channel, not sent. */
  | { kind: 'work.abort'; message_id: string };

export function modelCallJobId(call: Omit<ModelCall, 'org_id' | 'session_id'>): string {
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

/** Starts a queued message in a turn of its own (a deferred start). */
export function messageStart(messageId: string): SessionCommand {
  return { kind: 'message.start', command_id: `start-${messageId}`, message_id: messageId };
}

/** The `model.responded` command that carries a model call's answer back to the session. */
export function modelAnswerCommandId(call: Omit<ModelCall, 'org_id' | 'session_id'>): string {
  return `resp-${call.message_id}-${call.attempt}-${call.call_index}`;
}

/** A session command's job id: the command id, so a retried send is still one job. */
export function sessionJobId(sessionId: string, commandId: string): string {
  return safeJobId(`${sessionId}.${commandId}`);
}
