import { UpstreamError } from '../../errors.js';
import { sseFrame, type SseMessage } from '../../sse.js';
import type { OutBlock, StreamEvent, ToolDef } from '../../types.js';
import { newId, type Json, type RoutingInfo, type StreamDecoder, type StreamEncoder } from '../format.js';
import { customInput, outputItem, responseObject, stopOf, usageOf } from './response.js';

/** Responses events → canonical events; output items map to blocks by their output_index. */
export class ResponsesDecoder implements StreamDecoder {
  private readonly index = new Map<number, number>();
  private next = 0;
  private finished = false;
  private sawToolCall = false;

  push(msg: SseMessage): StreamEvent[] {
    const ev = JSON.parse(msg.data) as Json;
    const at = this.index.get(Number(ev.output_index));
    switch (ev.type) {
      case 'response.created': {
        const r = (ev.response ?? {}) as Json;
        return [{ type: 'start', id: String(r.id ?? newId('resp_')), model: String(r.model ?? '') }];
      }
      case 'response.output_item.added': {
        const it = (ev.item ?? {}) as Json;
        if (it.type !== 'message' && it.type !== 'function_call') return [];
        const i = this.next++;
        this.index.set(Number(ev.output_index), i);
        if (it.type === 'function_call') this.sawToolCall = true;
        return [{ type: 'block_start', index: i, block: it.type === 'message' ? { type: 'text' } : { type: 'tool_call', id: String(it.call_id), name: String(it.name) } }];
      }
      case 'response.output_text.delta':
        return at === undefined || !ev.delta ? [] : [{ type: 'text', index: at, text: String(ev.delta) }];
      case 'response.function_call_arguments.delta':
        return at === undefined || !ev.delta ? [] : [{ type: 'args', index: at, json: String(ev.delta) }];
      case 'response.output_item.done':
        return at === undefined ? [] : [{ type: 'block_stop', index: at }];
      case 'response.completed':
      case 'response.incomplete': {
        if (this.finished) return [];
        this.finished = true;
        const r = (ev.response ?? {}) as Json;
        return [{ type: 'finish', stop: stopOf(r, this.sawToolCall ? [{ type: 'tool_call' }] : []), usage: usageOf(r.usage as Json | undefined) }];
      }
      case 'response.failed':
      case 'error': {
        const e = ((ev.response as Json)?.error ?? ev) as Json;
        throw new UpstreamError(`upstream stream error: ${String(e.code ?? '')} ${String(e.message ?? '')}`, true);
      }
      default:
        return [];
    }
  }

  end(): StreamEvent[] {
    if (this.finished) return [];
    throw new UpstreamError('upstream stream ended before response.completed', true);
  }
}

/**
 * Canonical events → responses events. The format's `*.done` events and the
 * final response repeat the full output, so a copy of each block is kept as
 * it streams past (the deltas themselves are forwarded at once, except a
 * custom tool's: its `input` text is inside the JSON arguments the model
 * streams, so it is sent whole when the call ends).
 */
export class ResponsesEncoder implements StreamEncoder {
  private seq = 0;
  private id = newId('resp_');
  private model = '';
  private readonly blocks: OutBlock[] = [];
  private readonly itemIds: string[] = [];
  private readonly custom: boolean[] = [];

  constructor(
    private readonly routing: RoutingInfo | null,
    private readonly tools?: ToolDef[],
  ) {}

  private frame(type: string, payload: Json): string {
    return sseFrame({ type, sequence_number: this.seq++, ...payload }, type);
  }

  encode(ev: StreamEvent): string {
    switch (ev.type) {
      case 'start': {
        if (ev.id.startsWith('resp_')) this.id = ev.id;
        this.model = this.routing?.selected_model ?? ev.model;
        const response = responseObject(this.id, this.model, [], null, null, null);
        return this.frame('response.created', { response }) + this.frame('response.in_progress', { response });
      }
      case 'block_start': {
        const b: OutBlock = ev.block.type === 'text' ? { type: 'text', text: '' } : { type: 'tool_call', id: ev.block.id, name: ev.block.name, arguments: '' };
        this.blocks[ev.index] = b;
        const itemId = (this.itemIds[ev.index] = `${b.type === 'text' ? 'msg' : 'fc'}_${this.id.slice(5)}_${ev.index}`);
        const item = outputItem(b, itemId, 'in_progress', this.tools);
        if (b.type === 'text') item.content = [];
        this.custom[ev.index] = item.type === 'custom_tool_call';
        let out = this.frame('response.output_item.added', { output_index: ev.index, item });
        if (b.type === 'text') out += this.frame('response.content_part.added', { item_id: itemId, output_index: ev.index, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
        return out;
      }
      case 'text': {
        const b = this.blocks[ev.index];
        if (b?.type === 'text') b.text += ev.text;
        return this.frame('response.output_text.delta', { item_id: this.itemIds[ev.index], output_index: ev.index, content_index: 0, delta: ev.text, logprobs: [] });
      }
      case 'args': {
        const b = this.blocks[ev.index];
        if (b?.type === 'tool_call') b.arguments += ev.json;
        if (this.custom[ev.index]) return '';
        return this.frame('response.function_call_arguments.delta', { item_id: this.itemIds[ev.index], output_index: ev.index, delta: ev.json });
      }
      case 'block_stop':
        return this.blockDone(ev.index);
      case 'finish': {
        const output = this.blocks.map((b, i) => outputItem(b, this.itemIds[i], 'completed', this.tools));
        const response = responseObject(this.id, this.model, output, ev.stop, ev.usage, this.routing);
        return this.frame(response.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response });
      }
    }
  }

  private blockDone(index: number): string {
    const b = this.blocks[index];
    const itemId = this.itemIds[index];
    if (!b) return '';
    if (b.type === 'text') {
      const part = { type: 'output_text', text: b.text, annotations: [] };
      return (
        this.frame('response.output_text.done', { item_id: itemId, output_index: index, content_index: 0, text: b.text, logprobs: [] }) +
        this.frame('response.content_part.done', { item_id: itemId, output_index: index, content_index: 0, part }) +
        this.frame('response.output_item.done', { output_index: index, item: outputItem(b, itemId) })
      );
    }
    const item = outputItem(b, itemId, 'completed', this.tools);
    if (this.custom[index]) {
      const input = customInput(b.arguments);
      return (
        (input === '' ? '' : this.frame('response.custom_tool_call_input.delta', { item_id: itemId, output_index: index, delta: input })) +
        this.frame('response.custom_tool_call_input.done', { item_id: itemId, output_index: index, input }) +
        this.frame('response.output_item.done', { output_index: index, item })
      );
    }
    return (
      this.frame('response.function_call_arguments.done', { item_id: itemId, output_index: index, arguments: b.arguments }) +
      this.frame('response.output_item.done', { output_index: index, item })
    );
  }

  error(message: string): string {
    return this.frame('error', { code: 'upstream_error', message, param: null });
  }
}
