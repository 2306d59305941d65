import { contentText } from '../../typescript/src/content-text.js';
import type { StreamItem } from '../../typescript/src/stream.js';
import { errorText, h } from './dom.js';
import { client } from './state.js';

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
  /** Approve / Deny of confirmations not yet answered, by `<message_id>:<tool_call_id>`: the answer, expiry or cancel removes them. */
  private asking = new Map<string, HTMLElement>();

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
      case 'tool.confirmation_requested': {
        const li = row('ev-tool ev-ask', seq, item.type, `${item.data.tool_name}(${JSON.stringify(item.data.arguments)}) [${item.data.tool_call_id}] asks for confirmation `);
        const buttons = this.confirmButtons(item.session_id, item.data.message_id, item.data.tool_call_id);
        this.asking.set(`${item.data.message_id}:${item.data.tool_call_id}`, buttons);
        li.append(buttons);
        return [li];
      }
      case 'user.tool_confirmation':
        this.answered(item.data.message_id, item.data.tool_call_id);
        return [row('ev-user', seq, item.type, `${item.data.result === 'allow' ? 'allowed' : 'denied'} ${item.data.tool_call_id}${item.data.deny_message ? `: ${item.data.deny_message}` : ''}`)];
      case 'tool.call_completed':
        return [row('ev-tool', seq, item.type, `${item.data.tool_name} ← ${'output' in item.data ? JSON.stringify(item.data.output) : '(nothing)'}`)];
      case 'tool.call_failed':
        this.answered(item.data.message_id, item.data.tool_call_id);
        return [row('ev-tool ev-error', seq, item.type, `${item.data.tool_name} failed (${item.data.reason}): ${item.data.error}`)];
      case 'tool.result_submitted':
        return [row('ev-tool', seq, item.type, `result for ${item.data.tool_call_id}${item.data.is_error ? ' (error)' : ''} ← ${JSON.stringify(item.data.result)}`)];
      // A code agent's ctx calls (docs/code-agents.md): what the run called, its result, and its progress text.
      case 'agent.call_started': {
        const d = item.data;
        const retry = d.attempt ? `, try ${d.attempt} in ${d.retry_in_ms ?? 0} ms after: ${d.error ?? 'an error'}` : '';
        const what = d.kind === 'model' ? `ctx.model(${d.name})${retry}` : d.kind === 'sleep' ? `ctx.sleep until ${d.until ?? '?'}` : `ctx.tool ${d.name}(${JSON.stringify(d.arguments)}) [${d.tool_call_id ?? ''}]`;
        return [row('ev-tool', seq, item.type, `#${d.position} → ${what}`)];
      }
      case 'agent.call_completed': {
        const d = item.data;
        const out = d.output as { text?: unknown } | null | undefined;
        const what = d.kind === 'sleep' ? 'ctx.sleep ended' : `ctx.model ← ${typeof out?.text === 'string' ? out.text : JSON.stringify(out ?? null)}`;
        return [row('ev-tool', seq, item.type, `#${d.position} ${what}`)];
      }
      case 'agent.call_failed':
        return [row('ev-tool ev-error', seq, item.type, `#${item.data.position} ctx.${item.data.kind} failed: ${item.data.error}`)];
      case 'agent.progress':
        return [row('ev-status', seq, item.type, `… ${item.data.text}`)];
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

  private answered(messageId: string, toolCallId: string): void {
    const key = `${messageId}:${toolCallId}`;
    this.asking.get(key)?.remove();
    this.asking.delete(key);
  }

  /** Approve and Deny (with an optional reason the model reads); the ledger's answer event then removes them. */
  private confirmButtons(sessionId: string, messageId: string, toolCallId: string): HTMLElement {
    const reason = h('input', { 'aria-label': `deny reason for ${toolCallId}`, placeholder: 'reason (optional)' });
    const errors = h('span', { class: 'errors', role: 'alert' });
    const answer = (result: 'allow' | 'deny') => {
      errors.textContent = '';
      const denyMessage = result === 'deny' && reason.value.trim() ? reason.value.trim() : undefined;
      client()
        .sessions.confirmTool(sessionId, { message_id: messageId, tool_call_id: toolCallId }, result, { denyMessage })
        .catch((err) => (errors.textContent = errorText(err)));
    };
    return h(
      'span',
      { class: 'confirm', 'data-confirm': toolCallId },
      h('button', { type: 'button', 'data-answer': 'allow', onclick: () => answer('allow') }, 'Approve'),
      h('button', { type: 'button', 'data-answer': 'deny', onclick: () => answer('deny') }, 'Deny'),
      reason,
      errors,
    );
  }
}
