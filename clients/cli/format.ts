import type { StreamItem } from '../typescript/src/stream.js';

type Data = Record<string, unknown>;

function clip(s: string, n = 160): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
}

function text(blocks: unknown): string {
  return Array.isArray(blocks) ? blocks.map((b: Data) => (b.type === 'text' ? String(b.text) : `[${String(b.type)} ${String(b.file_id ?? '')}]`)).join(' ') : '';
}

/** One readable line per ledger event, for `troupe tail`; null for records a person does not need. */
export function describeEvent(item: StreamItem): string | null {
  if (item.type === 'assistant.delta') {
    const d = (item as { data: Data }).data;
    return typeof d?.text === 'string' ? d.text : null;
  }
  if (!('sequence_number' in item)) return null;
  const d = item.data as Data;
  const head = `#${String(item.sequence_number).padEnd(4)} ${item.created_at.slice(11, 19)}`;
  switch (item.type) {
    case 'user.message':
      return `${head}  user       ${clip(text(d.content))}`;
    case 'session.status_changed':
      return `${head}  session    ${String(d.from)} → ${String(d.to)}`;
    case 'message.status_changed':
      return `${head}  message    ${item.message_id} ${d.from ?? 'new'} → ${String(d.to)}${d.error ? `: ${clip(String(d.error))}` : ''}`;
    case 'assistant.message_completed': {
      const parts = (d.parts as Data[] | undefined) ?? [];
      const lines = parts.map((p) => (p.type === 'text' ? `assistant  ${clip(String(p.text), 400)}` : `tool call  ${String(p.name)}(${clip(JSON.stringify(p.arguments))}) [${String(p.id)}]`));
      return lines.map((l) => `${head}  ${l}`).join('\n') || `${head}  assistant  (no output)`;
    }
    case 'tool.call_requested':
      return `${head}  waiting    ${String(d.tool_name)} [${String(d.tool_call_id)}] needs a result: troupe tool-result ${item.session_id} ${String(d.tool_call_id)} --json '{…}'`;
    case 'tool.call_completed':
      return `${head}  tool       ${String(d.tool_name)} → ${clip(JSON.stringify(d.output))}`;
    case 'tool.call_failed':
      return `${head}  tool       ${String(d.tool_name)} failed (${String(d.reason)}): ${clip(String(d.error))}`;
    case 'tool.result_submitted':
      return `${head}  result     ${String(d.tool_call_id)}${d.is_error ? ' (error)' : ''} → ${clip(JSON.stringify(d.result))}`;
    case 'webhook.delivery_failed':
      return `${head}  webhook    ${String(d.event_type)} delivery failed after ${String(d.attempts)} attempts: ${clip(String(d.last_error))}`;
    default:
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
