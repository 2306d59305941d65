import type { LlmResponse, OutBlock, StreamEvent } from './types.js';

/**
 * Folds canonical stream events into a whole response. Used where a caller
 * wants one answer but the upstream streamed (agent turns, tests).
 */
export class Accumulator {
  private id = '';
  private model = '';
  private readonly blocks: OutBlock[] = [];
  private stop: LlmResponse['stop'] = 'end';
  private usage = { inputTokens: 0, outputTokens: 0 };

  push(ev: StreamEvent): void {
    switch (ev.type) {
      case 'start':
        this.id = ev.id;
        this.model = ev.model;
        break;
      case 'block_start':
        this.blocks[ev.index] = ev.block.type === 'text' ? { type: 'text', text: '' } : { type: 'tool_call', id: ev.block.id, name: ev.block.name, arguments: '' };
        break;
      case 'text': {
        const b = this.blocks[ev.index];
        if (b?.type === 'text') b.text += ev.text;
        break;
      }
      case 'args': {
        const b = this.blocks[ev.index];
        if (b?.type === 'tool_call') b.arguments += ev.json;
        break;
      }
      case 'finish':
        this.stop = ev.stop;
        this.usage = ev.usage;
        break;
    }
  }

  result(): LlmResponse {
    const blocks = this.blocks.filter(Boolean).map((b) => (b.type === 'tool_call' && b.arguments === '' ? { ...b, arguments: '{}' } : b));
    return { id: this.id, model: this.model, blocks, stop: this.stop, usage: this.usage };
  }
}
