import type { ContentBlock, EventType, MessageStatus, OutputPart, SessionStatus } from './ledger.js';

/**
 * What each ledger event type carries in `data`, as the session actor appends it. The wire schemas
 * (src/http/routes/sessions/ledger-events.ts) say the same for clients, and test/unit/ledger-event-schemas.test.ts
 * holds the events the decisions make to them; this is the compiler's side, so a wrong payload does not build.
 */
export interface EventData {
  'user.message': { content: ContentBlock[]; metadata: Record<string, string> | null; message_id: string };
  'session.status_changed': { from: SessionStatus; to: SessionStatus };
  'message.status_changed': {
    message_id: string;
    /** Null for a new message. */
    from: MessageStatus | null;
    to: MessageStatus;
    attempt: number;
    /** Why, when `to` is failed, or the retryable failure on a retry. */
    error?: string;
    /** On a retry: the backoff before it. */
    retry_in_ms?: number;
  };
  'assistant.message_completed': {
    message_id: string;
    call_index: number;
    parts: OutputPart[];
    stop_reason: string;
    usage: { input_tokens: number; output_tokens: number } | null;
    /** True when the response has no tool calls: the message then completes. */
    final: boolean;
  };
  /** Exactly the webhook body of the same name. */
  'tool.call_requested': {
    id: string;
    type: 'tool.call_requested';
    session_id: string;
    message_id: string;
    tool_call_id: string;
    tool_name: string;
    arguments: Record<string, unknown>;
    input_schema: Record<string, unknown>;
    output_schema: Record<string, unknown>;
    expires_at: string;
    submit_url: string;
  };
  'tool.call_completed': ToolCallData & { kind: 'custom'; /** Absent when the handler returned nothing. */ output?: unknown };
  'tool.call_failed': ToolCallData & {
    /** Null for a tool the agent does not have. */
    kind: 'custom' | 'external' | null;
    reason: 'timeout' | 'error' | 'unknown_tool' | 'cancelled';
    error: string;
  };
  'tool.result_submitted': { message_id: string; tool_call_id: string; result: unknown; is_error: boolean };
  'webhook.delivery_failed': { delivery_id: string; webhook_id: string; event_type: string; url: string; attempts: number; last_error: string; reason: WebhookFailureReason };
}

/** Why a delivery ended without success (docs/webhooks.md). */
export type WebhookFailureReason = 'retries_exhausted' | 'gone' | 'disabled' | 'expired' | 'config_deleted' | 'unsubscribed';

interface ToolCallData {
  message_id: string;
  tool_call_id: string;
  tool_name: string;
}

/** Every event type has its data: a type added to EVENT_TYPES without it fails here. */
type Covered = EventType extends keyof EventData ? (keyof EventData extends EventType ? true : never) : never;
export const EVERY_EVENT_TYPE_HAS_DATA: Covered = true;
