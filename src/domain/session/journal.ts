import type { EventEnvelope } from '../ledger.js';
import type { AgentCallResult } from './code-step.js';

/** One journaled `ctx` call of a message, as a replay answers it: what was called, and its result once recorded. */
export interface JournalEntry {
  position: number;
  kind: 'model' | 'tool' | 'sleep' | 'emit';
  name: string;
  arguments: unknown;
  result?: AgentCallResult;
}

/** The text a failed tool result carries to the run (ctx.tool rejects with it). */
function errorText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value ?? null);
}

/**
 * A message's journal, read from its ledger events in order: the ledger is the journal, nothing else is kept.
 * Requests are `agent.call_started` and `agent.progress`; results are `agent.call_completed`/`agent.call_failed`
 * (models, sleeps) and the spec's tool events, matched to their request by `tool_call_id`. Pure.
 */
export function journalOf(events: readonly EventEnvelope[], messageId: string): JournalEntry[] {
  const byPosition = new Map<number, JournalEntry>();
  const byToolCall = new Map<string, JournalEntry>();
  for (const ev of events) {
    if (ev.message_id !== messageId) continue;
    switch (ev.type) {
      case 'agent.call_started': {
        const entry: JournalEntry = { position: ev.data.position, kind: ev.data.kind, name: ev.data.name, arguments: ev.data.arguments };
        byPosition.set(entry.position, entry);
        if (ev.data.tool_call_id) byToolCall.set(ev.data.tool_call_id, entry);
        break;
      }
      case 'agent.progress':
        byPosition.set(ev.data.position, { position: ev.data.position, kind: 'emit', name: 'emit', arguments: { text: ev.data.text }, result: { ok: true, output: null } });
        break;
      case 'agent.call_completed':
        settle(byPosition.get(ev.data.position), { ok: true, output: ev.data.output ?? null });
        break;
      case 'agent.call_failed':
        settle(byPosition.get(ev.data.position), { ok: false, error: ev.data.error });
        break;
      case 'tool.call_completed':
        settle(byToolCall.get(ev.data.tool_call_id), { ok: true, output: ev.data.output ?? null });
        break;
      case 'tool.call_failed':
        settle(byToolCall.get(ev.data.tool_call_id), { ok: false, error: ev.data.error });
        break;
      case 'tool.result_submitted':
        settle(byToolCall.get(ev.data.tool_call_id), ev.data.is_error ? { ok: false, error: errorText(ev.data.result) } : { ok: true, output: ev.data.result ?? null });
        break;
      default:
        break;
    }
  }
  return [...byPosition.values()].sort((a, b) => a.position - b.position);
}

/** The first result of a call counts; a later one (there is none while the session is the one writer) is ignored. */
function settle(entry: JournalEntry | undefined, result: AgentCallResult): void {
  if (entry && !entry.result) entry.result = result;
}
