import { contentText } from '../typescript/src/content-text.js';
import type { StreamItem } from '../typescript/src/stream.js';

function clip(s: string, n = 160): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
}

/** One readable line per ledger event, for `troupe tail`; null for records a person does not need. */
export function describeEvent(item: StreamItem): string | null {
  if (item.type === 'assistant.delta') return typeof item.data?.text === 'string' ? item.data.text : null;
  // Records of no ledger type (a newer server's) carry no place to show.
  if (!('sequence_number' in item)) return null;
  const head = `#${String(item.sequence_number).padEnd(4)} ${item.created_at.slice(11, 19)}`;
  switch (item.type) {
    case 'user.message':
      return `${head}  user       ${clip(contentText(item.data.content))}`;
    case 'session.status_changed':
      return `${head}  session    ${item.data.from} → ${item.data.to}`;
    case 'message.status_changed': {
      const d = item.data;
      return `${head}  message    ${item.message_id} ${d.from ?? 'new'} → ${d.to}${d.error ? `: ${clip(d.error)}` : ''}`;
    }
    case 'assistant.message_completed': {
      const lines = item.data.parts.map((p) => (p.type === 'text' ? `assistant  ${clip(p.text, 400)}` : `tool call  ${p.name}(${clip(JSON.stringify(p.arguments))}) [${p.id}]`));
      return lines.map((l) => `${head}  ${l}`).join('\n') || `${head}  assistant  (no output)`;
    }
    case 'tool.call_requested':
      return `${head}  waiting    ${item.data.tool_name} [${item.data.tool_call_id}] needs a result: troupe tool-result ${item.session_id} ${item.data.tool_call_id} --json '{…}'`;
    case 'tool.call_completed':
      return `${head}  tool       ${item.data.tool_name} → ${'output' in item.data ? clip(JSON.stringify(item.data.output)) : '(nothing)'}`;
    case 'tool.call_failed':
      return `${head}  tool       ${item.data.tool_name} failed (${item.data.reason}): ${clip(item.data.error)}`;
    case 'tool.result_submitted':
      return `${head}  result     ${item.data.tool_call_id}${item.data.is_error ? ' (error)' : ''} → ${clip(JSON.stringify(item.data.result))}`;
    case 'tool.confirmation_requested':
      return `${head}  confirm?   ${item.data.tool_name}(${clip(JSON.stringify(item.data.arguments))}) [${item.data.tool_call_id}]: troupe approve|deny ${item.session_id} ${item.data.tool_call_id}`;
    case 'user.tool_confirmation':
      return `${head}  ${item.data.result === 'allow' ? 'allowed ' : 'denied  '}   ${item.data.tool_call_id}${item.data.deny_message ? `: ${clip(item.data.deny_message)}` : ''}`;
    case 'webhook.delivery_failed':
      return `${head}  webhook    ${item.data.event_type} delivery failed after ${item.data.attempts} attempts: ${clip(item.data.last_error)}`;
    default:
      // A type this build does not know yet (a newer server): named, not dropped.
      return `${head}  ${(item as { type: string }).type}`;
  }
}

/** Columns padded to their widest cell. */
export function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ')).join('\n');
}

/** The assistant's text of a message's output. */
export function answerText(parts: { type: string; text?: string }[]): string {
  return parts
    .filter((p) => p.type === 'text')
    .map((p) => p.text ?? '')
    .join('');
}
