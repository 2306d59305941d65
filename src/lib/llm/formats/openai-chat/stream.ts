import { UpstreamError } from '../../errors.js';
import type { SseMessage } from '../../sse.js';
import { sseFrame } from '../../sse.js';
import type { StopReason, StreamEvent, Usage } from '../../types.js';
import { asArray, newId, type Json, type RoutingInfo, type StreamDecoder, type StreamEncoder } from '../format.js';
import { CHAT_FINISH, CHAT_STOP, chatUsage, chatUsageIn } from './response.js';

/**
 * Chat chunks carry text and tool calls as deltas keyed by tool index, and
 * settle the finish reason before the usage chunk; `finish` is therefore
 * emitted only at `[DONE]` (or the end of the body).
 */
export class ChatDecoder implements StreamDecoder {
  private started = false;
  private open: { index: number; key: string } | null = null;
  private next = 0;
  private stop: StopReason = 'end';
  private usage: Usage = { inputTokens: 0, outputTokens: 0 };
  private finished = false;

  push(msg: SseMessage): StreamEvent[] {
    if (msg.data === '[DONE]') return this.finish();
    const chunk = JSON.parse(msg.data) as Json;
    const out: StreamEvent[] = [];
    if (!this.started) {
      this.started = true;
      out.push({ type: 'start', id: String(chunk.id ?? newId('chatcmpl-')), model: String(chunk.model ?? '') });
    }
    if (chunk.usage) this.usage = chatUsageIn(chunk.usage as Json);
    const choice = asArray(chunk.choices)[0];
    if (!choice) return out;
    const delta = (choice.delta ?? {}) as Json;
    if (typeof delta.content === 'string' && delta.content !== '') {
      this.switchTo('text', { type: 'text' }, out);
      out.push({ type: 'text', index: this.open!.index, text: delta.content });
    }
    for (const tc of asArray(delta.tool_calls)) {
      const fn = (tc.function ?? {}) as Json;
      this.switchTo(`tool:${tc.index ?? 0}`, { type: 'tool_call', id: String(tc.id ?? ''), name: String(fn.name ?? '') }, out);
      if (typeof fn.arguments === 'string' && fn.arguments !== '') out.push({ type: 'args', index: this.open!.index, json: fn.arguments });
    }
    if (choice.finish_reason) this.stop = CHAT_STOP[String(choice.finish_reason)] ?? 'end';
    return out;
  }

  private switchTo(key: string, block: Extract<StreamEvent, { type: 'block_start' }>['block'], out: StreamEvent[]): void {
    if (this.open?.key === key) return;
    if (this.open) out.push({ type: 'block_stop', index: this.open.index });
    this.open = { index: this.next++, key };
    out.push({ type: 'block_start', index: this.open.index, block });
  }

  end(): StreamEvent[] {
    if (this.finished) return [];
    // Without [DONE] the body was cut short; a partial answer must not pass for a whole one.
    throw new UpstreamError('openai upstream stream ended before [DONE]', true);
  }

  private finish(): StreamEvent[] {
    if (this.finished) return [];
    this.finished = true;
    const out: StreamEvent[] = [];
    if (this.open) out.push({ type: 'block_stop', index: this.open.index });
    this.open = null;
    out.push({ type: 'finish', stop: this.stop, usage: this.usage });
    return out;
  }
}

export class ChatEncoder implements StreamEncoder {
  private id = newId('chatcmpl-');
  private model = '';
  private readonly created = Math.floor(Date.now() / 1000);
  private readonly toolIndex = new Map<number, number>();
  /** A delta chunk's text up to its delta's fields, once the id and model are known (see `delta`). */
  private prefix: string | undefined;

  constructor(private readonly routing: RoutingInfo | null) {}

  /**
   * A delta chunk as text around the delta's one JSON-encoded value: the same bytes as `chunk` gives (a unit test
   * holds them equal), without the object tree and whole-chunk stringify per delta, which were a tenth of a routed
   * stream's allocation (docs/benchmarks.md).
   */
  private delta(fields: string): string {
    this.prefix ??= `data: {"id":${JSON.stringify(this.id)},"object":"chat.completion.chunk","created":${this.created},"model":${JSON.stringify(this.model)},"choices":[{"index":0,"delta":{`;
    return `${this.prefix}${fields}},"logprobs":null,"finish_reason":null}]}\n\n`;
  }

  private chunk(choices: Json[], extra: Json = {}): string {
    return sseFrame({ id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices, ...extra });
  }

  encode(ev: StreamEvent): string {
    switch (ev.type) {
      case 'start':
        this.model = this.routing?.selected_model ?? ev.model;
        if (ev.id.startsWith('chatcmpl')) this.id = ev.id;
        this.prefix = undefined;
        return this.chunk([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]);
      case 'text':
        return this.delta(`"content":${JSON.stringify(ev.text)}`);
      case 'block_start': {
        if (ev.block.type !== 'tool_call') return '';
        const i = this.toolIndex.size;
        this.toolIndex.set(ev.index, i);
        const call = { index: i, id: ev.block.id, type: 'function', function: { name: ev.block.name, arguments: '' } };
        return this.chunk([{ index: 0, delta: { tool_calls: [call] }, logprobs: null, finish_reason: null }]);
      }
      case 'args':
        return this.delta(`"tool_calls":[{"index":${this.toolIndex.get(ev.index) ?? 0},"function":{"arguments":${JSON.stringify(ev.json)}}}]`);
      case 'block_stop':
        return '';
      case 'finish': {
        const last: Json = { usage: chatUsage(ev.usage) };
        if (this.routing) last.service_routing = this.routing;
        return this.chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: CHAT_FINISH[ev.stop] }]) + this.chunk([], last) + 'data: [DONE]\n\n';
      }
    }
  }

  error(message: string): string {
    return sseFrame({ error: { type: 'api_error', code: 'upstream_error', message } }) + 'data: [DONE]\n\n';
  }
}
