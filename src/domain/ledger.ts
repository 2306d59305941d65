/**
 * Ledger and read-model types, in the spec's words. No I/O here: the session
 * actor's decisions and projections are pure functions over these.
 */
import type { EventData } from './event-data.js';

export const SESSION_STATUSES = ['idle', 'running'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];
export const MESSAGE_STATUSES = ['queued', 'running', 'requires_action', 'completed', 'failed', 'cancelled'] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];
export const TERMINAL_MESSAGE_STATUSES: readonly MessageStatus[] = ['completed', 'failed', 'cancelled'];

export const EVENT_TYPES = [
  'user.message',
  'session.status_changed',
  'message.status_changed',
  'assistant.message_completed',
  'tool.call_requested',
  'tool.call_completed',
  'tool.call_failed',
  'tool.result_submitted',
  'webhook.delivery_failed',
  'tool.confirmation_requested',
  'user.tool_confirmation',
  'agent.call_started',
  'agent.call_completed',
  'agent.call_failed',
  'agent.progress',
  'budget.threshold_reached',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** One block of a user message's content: a text, or a file or image by id (the schema in message-content.ts). */
export type ContentBlock = EventData['user.message']['content'][number];
/** A content block that names an uploaded file. */
export type FileBlock = Extract<ContentBlock, { file_id: string }>;

export type OutputPart =
  | { type: 'text'; text: string }
  | { type: 'tool_call'; id: string; name: string; arguments: Record<string, unknown> }
  | { type: 'tool_result'; tool_call_id: string; tool_name: string; content: { type: 'text'; text: string }[]; is_error: boolean };

export interface Actor {
  type: 'user' | 'system';
  id: string | null;
}

/** An event of one type before it has a place in the ledger: its data is that type's (EventData). */
export interface NewEventOf<T extends EventType> {
  type: T;
  message_id: string | null;
  source: 'user' | 'platform';
  actor: Actor;
  data: EventData[T];
}

/** An event before it has a place in the ledger; narrowing on `type` types `data`. */
export type NewEvent = { [T in EventType]: NewEventOf<T> }[EventType];

/** Where an event stands in the ledger. */
export interface EventPlace {
  id: string;
  session_id: string;
  sequence_number: number;
  created_at: string;
}

/** The canonical envelope, exactly as clients see it. */
export type EventEnvelope = NewEvent & EventPlace;

/**
 * The message this event ends, if it is a terminal `message.status_changed`;
 * else null. Waiters and streams decide "done" by this one rule.
 */
export function endedMessageId(ev: { type: string; message_id?: string | null; data?: object }): string | null {
  if (ev.type !== 'message.status_changed' || !ev.message_id) return null;
  return TERMINAL_MESSAGE_STATUSES.includes((ev.data as Partial<EventData['message.status_changed']> | undefined)?.to as MessageStatus) ? ev.message_id : null;
}

export const SYSTEM_ACTOR: Actor = Object.freeze({ type: 'system', id: null }) as Actor;
export const USER_ACTOR: Actor = Object.freeze({ type: 'user', id: null }) as Actor;

export function eventId(sessionId: string, sequence: number): string {
  return `${sessionId}:${sequence}`;
}

/** Session state as the actor and the `sessions` read model hold it. */
export interface SessionState {
  id: string;
  status: SessionStatus;
  /** Highest ledger sequence number applied to this state. */
  last_sequence: number;
  last_message_id: string | null;
  last_message_status: MessageStatus | null;
  /** Message being worked on, if any. */
  running_message_id: string | null;
  /** Messages waiting behind it, FIFO. */
  queued_message_ids: string[];
  /**
   * Recently applied commands and the sequence number of the first event each
   * produced, newest last and bounded, so a redelivered command is recognised
   * without a ledger query.
   */
  recent_commands: { id: string; seq: number }[];
}

/** A tool call of the last model response still waiting for a result. */
export interface PendingToolCall {
  id: string;
  name: string;
  /** When its wait ends: the confirmation's while `awaiting_confirmation`, else an external call's result's. */
  expires_at?: string;
  /** An `always_ask` call not yet allowed or denied: nothing runs for it until the client answers. */
  awaiting_confirmation?: boolean;
}

/** The `messages` read model of one user turn. */
export interface MessageState {
  id: string;
  session_id: string;
  sequence_number: number;
  parts: ContentBlock[];
  metadata: Record<string, string> | null;
  status: MessageStatus;
  attempt: number;
  /** Model calls made in the current attempt; the next call's index. */
  model_calls: number;
  /**
   * Highest ledger sequence applied to this message; a catch-up after a turn
   * that saved its messages but not its session skips what is already here.
   */
  last_sequence?: number;
  /** A code agent's journal bookkeeping (code-agent.ts); absent for declarative agents. */
  agent?: AgentJournalState;
  /** Tool calls of the last model response still waiting for a result. */
  pending_tool_calls: PendingToolCall[];
  output: { parts: OutputPart[] };
  error: string | null;
  created_at: string;
  completed_at: string | null;
  /**
   * Set when the message was cancelled by a later message's `on_busy`: after `interrupt` its turn stays in the
   * model's history (its content and output so far), after `rollback` it is left out. Absent otherwise.
   */
  interrupted?: 'interrupt' | 'rollback';
}

/**
 * What a code agent's message tracks besides its tool calls: how many journal positions are recorded (the next
 * step's fence), how many model calls it made (the scripted provider's turn), and its model calls and sleeps in
 * flight. A model call's request is JSON text: it is the agent's own JSON, which FerretDB v1 may not store as keys.
 */
export interface AgentJournalState {
  positions: number;
  model_calls: number;
  /** `attempt`: a model call's current try (1 when absent), moved on by a retry's `agent.call_started`. */
  pending: { position: number; kind: 'model' | 'sleep'; call_index?: number; request_json?: string; until?: string; attempt?: number }[];
}

/** Whether a tool call still waits for its result: the one rule for the session's turn and for the tool-runner, which runs nothing for a call that no longer waits. */
export function pendingCall(m: MessageState | undefined, attempt: number | null, toolCallId: string): boolean {
  return !!m && !TERMINAL_MESSAGE_STATUSES.includes(m.status) && (attempt === null || m.attempt === attempt) && m.pending_tool_calls.some((c) => c.id === toolCallId);
}
