import { UpstreamError } from '../../errors.js';
import { sseFrame, type SseMessage } from '../../sse.js';
import type { StopReason, StreamEvent } from '../../types.js';
import { newId, type Json, type RoutingInfo, type StreamDecoder, type StreamEncoder } from '../format.js';
import { ANTHROPIC_STOP, ANTHROPIC_STOP_OUT, anthropicUsageIn, anthropicUsageOut } from './response.js';

const USAGE_FIELDS = ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens'] as const;

/** Messages-API events → canonical events; thinking blocks are dropped and the rest renumbered. */
export class AnthropicDecoder implements StreamDecoder {
  private readonly index = new Map<number, number>();
  private next = 0;
  private stop: StopReason = 'end';
  /** The usage fields as Anthropic reports them: message_start has them all, message_delta the cumulative counts it updates. */
  private readonly usage: Json = {};
  private finished = false;

  push(msg: SseMessage): StreamEvent[] {
    const ev = JSON.parse(msg.data) as Json;
    switch (ev.type) {
      case 'message_start': {
        const m = (ev.message ?? {}) as Json;
        this.absorbUsage(m.usage as Json | undefined);
        return [{ type: 'start', id: String(m.id ?? newId('msg_')), model: String(m.model ?? '') }];
      }
      case 'content_block_start': {
        const b = (ev.content_block ?? {}) as Json;
        if (b.type !== 'text' && b.type !== 'tool_use') return [];
        const i = this.next++;
        this.index.set(Number(ev.index), i);
        const out: StreamEvent[] = [{ type: 'block_start', index: i, block: b.type === 'text' ? { type: 'text' } : { type: 'tool_call', id: String(b.id), name: String(b.name) } }];
        if (b.type === 'text' && b.text) out.push({ type: 'text', index: i, text: String(b.text) });
        return out;
      }
      case 'content_block_delta': {
        const i = this.index.get(Number(ev.index));
        const d = (ev.delta ?? {}) as Json;
        if (i === undefined) return [];
        if (d.type === 'text_delta') return [{ type: 'text', index: i, text: String(d.text ?? '') }];
        if (d.type === 'input_json_delta' && d.partial_json) return [{ type: 'args', index: i, json: String(d.partial_json) }];
        return [];
      }
      case 'content_block_stop': {
        const i = this.index.get(Number(ev.index));
        return i === undefined ? [] : [{ type: 'block_stop', index: i }];
      }
      case 'message_delta':
        this.stop = ANTHROPIC_STOP[String((ev.delta as Json)?.stop_reason)] ?? this.stop;
        this.absorbUsage(ev.usage as Json | undefined);
        return [];
      case 'message_stop':
        return this.finish();
      case 'error': {
        const e = (ev.error ?? {}) as Json;
        throw new UpstreamError(`upstream stream error: ${String(e.type)}: ${String(e.message)}`, e.type === 'overloaded_error' || e.type === 'api_error');
      }
      default:
        return [];
    }
  }

  private absorbUsage(u: Json | undefined): void {
    if (!u) return;
    for (const k of USAGE_FIELDS) if (typeof u[k] === 'number') this.usage[k] = u[k];
  }

  end(): StreamEvent[] {
    if (this.finished) return [];
    throw new UpstreamError('anthropic upstream stream ended before message_stop', true);
  }

  private finish(): StreamEvent[] {
    if (this.finished) return [];
    this.finished = true;
    return [{ type: 'finish', stop: this.stop, usage: anthropicUsageIn(this.usage) }];
  }
}

export class AnthropicEncoder implements StreamEncoder {
  constructor(private readonly routing: RoutingInfo | null) {}

  encode(ev: StreamEvent): string {
    switch (ev.type) {
      case 'start': {
        const message = { id: ev.id.startsWith('msg_') ? ev.id : `msg_${ev.id}`, type: 'message', role: 'assistant', model: this.routing?.selected_model ?? ev.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 } };
        return sseFrame({ type: 'message_start', message }, 'message_start');
      }
      case 'block_start': {
        const content_block = ev.block.type === 'text' ? { type: 'text', text: '' } : { type: 'tool_use', id: ev.block.id, name: ev.block.name, input: {} };
        return sseFrame({ type: 'content_block_start', index: ev.index, content_block }, 'content_block_start');
      }
      case 'text':
        return sseFrame({ type: 'content_block_delta', index: ev.index, delta: { type: 'text_delta', text: ev.text } }, 'content_block_delta');
      case 'args':
        return sseFrame({ type: 'content_block_delta', index: ev.index, delta: { type: 'input_json_delta', partial_json: ev.json } }, 'content_block_delta');
      case 'block_stop':
        return sseFrame({ type: 'content_block_stop', index: ev.index }, 'content_block_stop');
      case 'finish': {
        const usage = anthropicUsageOut(ev.usage);
        const delta = sseFrame({ type: 'message_delta', delta: { stop_reason: ANTHROPIC_STOP_OUT[ev.stop], stop_sequence: null }, usage }, 'message_delta');
        const stop: Json = { type: 'message_stop' };
        if (this.routing) stop.metadata = { service_routing: this.routing };
        return delta + sseFrame(stop, 'message_stop');
      }
    }
  }

  error(message: string): string {
    return sseFrame({ type: 'error', error: { type: 'api_error', message } }, 'error');
  }
}
