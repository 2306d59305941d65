import { TERMINAL_MESSAGE_STATUSES, type EventEnvelope, type MessageState, type SessionState } from '../ledger.js';

/**
 * Applies one ledger event to the session and message read models. Pure: the
 * same function serves the live turn and the catch-up after a crash, so the
 * projections can always be rebuilt from the ledger.
 */
export function applyEvent(session: SessionState, all: Map<string, MessageState>, ev: EventEnvelope): void {
  if (ev.sequence_number <= session.last_sequence) return;
  session.last_sequence = ev.sequence_number;
  const own = ev.message_id ? all.get(ev.message_id) : undefined;
  const already = own !== undefined && (own.last_sequence ?? 0) >= ev.sequence_number;
  // The session still applies it; the message, which already has it, must not twice.
  const messages = already ? new Map([...all].filter(([id]) => id !== ev.message_id)) : all;
  if (own && !already) own.last_sequence = ev.sequence_number;
  switch (ev.type) {
    case 'user.message': {
      const d = ev.data;
      const id = ev.message_id!;
      if (already) {
        session.last_message_id = id;
        session.last_message_status = own.status;
        break;
      }
      messages.set(id, {
        last_sequence: ev.sequence_number,
        id,
        session_id: ev.session_id,
        sequence_number: ev.sequence_number,
        parts: d.content,
        metadata: d.metadata ?? null,
        status: 'queued',
        attempt: 1,
        model_calls: 0,
        pending_tool_calls: [],
        output: { parts: [] },
        error: null,
        created_at: ev.created_at,
        completed_at: null,
      });
      session.last_message_id = id;
      session.last_message_status = 'queued';
      break;
    }
    case 'message.status_changed':
      applyMessageStatus(session, messages, ev);
      break;
    case 'session.status_changed':
      session.status = ev.data.to;
      break;
    case 'assistant.message_completed': {
      const m = messages.get(ev.message_id!);
      if (!m) break;
      // Events of older builds may lack either field.
      const parts = ev.data.parts ?? [];
      m.output = { parts: [...m.output.parts, ...parts] };
      m.model_calls = (ev.data.call_index ?? m.model_calls) + 1;
      m.pending_tool_calls = parts.flatMap((p) => (p.type === 'tool_call' ? [{ id: p.id, name: p.name }] : []));
      break;
    }
    case 'tool.call_requested': {
      const call = messages.get(ev.message_id!)?.pending_tool_calls.find((c) => c.id === ev.data.tool_call_id);
      if (call) call.expires_at = ev.data.expires_at;
      break;
    }
    case 'tool.confirmation_requested': {
      const call = messages.get(ev.message_id!)?.pending_tool_calls.find((c) => c.id === ev.data.tool_call_id);
      if (call) {
        call.awaiting_confirmation = true;
        call.expires_at = ev.data.expires_at;
      }
      break;
    }
    case 'user.tool_confirmation': {
      // Answered: the call waits no more for the client's word, only (if allowed) for its run or result.
      const call = messages.get(ev.message_id!)?.pending_tool_calls.find((c) => c.id === ev.data.tool_call_id);
      if (call) {
        delete call.awaiting_confirmation;
        delete call.expires_at;
      }
      break;
    }
    case 'tool.call_completed':
    case 'tool.call_failed':
    case 'tool.result_submitted':
      applyToolResult(messages, ev);
      break;
    case 'agent.call_started':
    case 'agent.progress':
    case 'agent.call_completed':
    case 'agent.call_failed':
      applyAgentCall(messages.get(ev.message_id!), ev);
      break;
    default:
      break;
  }
}

type AgentCallEvent = Extract<EventEnvelope, { type: 'agent.call_started' | 'agent.progress' | 'agent.call_completed' | 'agent.call_failed' }>;

/**
 * A code agent's journal bookkeeping: positions recorded, and what is in flight. A tool call is pending as a model's
 * is (`pending_tool_calls`, its call in the output), so results, deadlines and cancels treat both loops alike.
 */
function applyAgentCall(m: MessageState | undefined, ev: AgentCallEvent): void {
  if (!m) return;
  const a = (m.agent ??= { positions: 0, model_calls: 0, pending: [] });
  if (ev.type === 'agent.call_completed' || ev.type === 'agent.call_failed') {
    a.pending = a.pending.filter((p) => p.position !== ev.data.position);
    return;
  }
  a.positions = Math.max(a.positions, ev.data.position + 1);
  if (ev.type === 'agent.progress') return;
  const d = ev.data;
  if (d.kind === 'tool') {
    const id = d.tool_call_id ?? `ctx_${d.position}`;
    m.pending_tool_calls = [...m.pending_tool_calls, { id, name: d.name }];
    m.output = { parts: [...m.output.parts, { type: 'tool_call', id, name: d.name, arguments: d.arguments }] };
  } else if (d.kind === 'model' && a.pending.some((p) => p.position === d.position)) {
    // A retry of a model call in flight (a retryable failure): the same call, its next try.
    a.pending = a.pending.map((p) => (p.position === d.position ? { ...p, attempt: d.attempt ?? 1 } : p));
  } else if (d.kind === 'model') {
    a.pending = [...a.pending, { position: d.position, kind: 'model', call_index: a.model_calls, request_json: JSON.stringify(d.arguments) }];
    a.model_calls += 1;
  } else {
    a.pending = [...a.pending, { position: d.position, kind: 'sleep', ...(d.until ? { until: d.until } : {}) }];
  }
}

/** An event that answers a tool call. */
type ToolResultEvent = Extract<EventEnvelope, { type: 'tool.call_completed' | 'tool.call_failed' | 'tool.result_submitted' }>;

/** A tool result joins the output right after the calls, and the call stops being pending. */
function applyToolResult(messages: Map<string, MessageState>, ev: ToolResultEvent): void {
  const m = messages.get(ev.message_id!);
  const id = ev.data.tool_call_id;
  const pending = m?.pending_tool_calls.find((c) => c.id === id);
  if (!m || !pending) return;
  m.pending_tool_calls = m.pending_tool_calls.filter((c) => c.id !== id);
  const isError = ev.type === 'tool.call_failed' || (ev.type === 'tool.result_submitted' && ev.data.is_error === true);
  m.output = { parts: [...m.output.parts, { type: 'tool_result', tool_call_id: id, tool_name: pending.name, content: resultContent(ev), is_error: isError }] };
}

/** The text the model gets back for a tool result. */
export function resultContent(ev: ToolResultEvent): { type: 'text'; text: string }[] {
  if (ev.type === 'tool.call_failed') return [{ type: 'text', text: String(ev.data.error ?? 'tool call failed') }];
  const value = ev.type === 'tool.result_submitted' ? ev.data.result : ev.data.output;
  return [{ type: 'text', text: typeof value === 'string' ? value : JSON.stringify(value ?? null) }];
}

function applyMessageStatus(session: SessionState, messages: Map<string, MessageState>, ev: Extract<EventEnvelope, { type: 'message.status_changed' }>): void {
  const id = ev.message_id!;
  const to = ev.data.to;
  const m = messages.get(id);
  if (m) {
    m.status = to;
    m.attempt = ev.data.attempt ?? m.attempt;
    if (TERMINAL_MESSAGE_STATUSES.includes(to)) {
      m.completed_at = ev.created_at;
      m.error = ev.data.error ?? null;
      if (ev.data.on_busy) m.interrupted = ev.data.on_busy;
    }
  }
  if (session.last_message_id === id) session.last_message_status = to;
  session.queued_message_ids = session.queued_message_ids.filter((q) => q !== id);
  if (to === 'queued') session.queued_message_ids.push(id);
  if (to === 'running') session.running_message_id = id;
  else if (TERMINAL_MESSAGE_STATUSES.includes(to) && session.running_message_id === id) session.running_message_id = null;
}

export function emptySessionState(id: string): SessionState {
  return { id, status: 'idle', last_sequence: 0, last_message_id: null, last_message_status: null, running_message_id: null, queued_message_ids: [], recent_commands: [] };
}

export const RECENT_COMMANDS = 200;

/** Remembers that `commandId` produced the events starting at `firstSequence`. */
export function noteCommand(session: SessionState, commandId: string, firstSequence: number): void {
  if (session.recent_commands.some((c) => c.id === commandId)) return;
  session.recent_commands.push({ id: commandId, seq: firstSequence });
  if (session.recent_commands.length > RECENT_COMMANDS) session.recent_commands.splice(0, session.recent_commands.length - RECENT_COMMANDS);
}
