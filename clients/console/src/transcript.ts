import { contentText } from '../../typescript/src/content-text.js';
import type { StreamItem } from '../../typescript/src/stream.js';
import { h } from './dom.js';

function row(cls: string, seq: number | null, type: string, text: string): HTMLLIElement {
  return h('li', { class: cls, 'data-type': type, ...(seq !== null ? { 'data-seq': String(seq) } : {}) }, seq !== null ? h('span', { class: 'seq' }, `#${seq}`) : null, text);
}

/**
 * Renders the ledger as a conversation: messages, tool calls and results,
 * status changes, and live token deltas in a bubble that the completed
 * assistant message replaces.
 */
export class Transcript {
  private live = new Map<string, HTMLLIElement>();

  constructor(private readonly list: HTMLElement) {}

  add(item: StreamItem): void {
    const nearBottom = this.list.scrollHeight - this.list.scrollTop - this.list.clientHeight < 40;
    for (const li of this.render(item)) this.list.append(li);
    if (nearBottom) this.list.scrollTop = this.list.scrollHeight;
  }

  private render(item: StreamItem): HTMLLIElement[] {
    if (item.type === 'assistant.delta') {
      const d = item.data;
      if (typeof d?.text !== 'string') return [];
      const key = String(d.message_id);
      const bubble = this.live.get(key);
      if (bubble) {
        bubble.append(d.text);
        return [];
      }
      const fresh = row('ev-live', null, 'assistant.delta', d.text);
      this.live.set(key, fresh);
      return [fresh];
    }
    if (!('sequence_number' in item)) return [];
    const seq = item.sequence_number;
    switch (item.type) {
      case 'user.message':
        return [row('ev-user', seq, item.type, contentText(item.data.content))];
      case 'assistant.message_completed': {
        this.live.get(String(item.message_id))?.remove();
        this.live.delete(String(item.message_id));
        return item.data.parts.map((p) =>
          p.type === 'text' ? row('ev-assistant', seq, 'assistant.text', p.text) : row('ev-tool', seq, 'assistant.tool_call', `→ ${p.name}(${JSON.stringify(p.arguments)})  [${p.id}]`),
        );
      }
      case 'tool.call_requested':
        return [row('ev-tool', seq, item.type, `${item.data.tool_name} [${item.data.tool_call_id}] waits for a result`)];
      case 'tool.call_completed':
        return [row('ev-tool', seq, item.type, `${item.data.tool_name} ← ${'output' in item.data ? JSON.stringify(item.data.output) : '(nothing)'}`)];
      case 'tool.call_failed':
        return [row('ev-tool ev-error', seq, item.type, `${item.data.tool_name} failed (${item.data.reason}): ${item.data.error}`)];
      case 'tool.result_submitted':
        return [row('ev-tool', seq, item.type, `result for ${item.data.tool_call_id}${item.data.is_error ? ' (error)' : ''} ← ${JSON.stringify(item.data.result)}`)];
      case 'session.status_changed':
        return [row('ev-status', seq, item.type, `session ${item.data.from} → ${item.data.to}`)];
      case 'message.status_changed': {
        const d = item.data;
        return [row(`ev-status${d.to === 'failed' ? ' ev-error' : ''}`, seq, item.type, `message ${d.from ?? 'new'} → ${d.to}${d.error ? `: ${d.error}` : ''}`)];
      }
      default:
        return [row('ev-status', seq, item.type, item.type)];
    }
  }
}
