import assert from 'node:assert/strict';
import { Accumulator } from '../../src/lib/llm/accumulate.js';
import { FORMATS } from '../../src/lib/llm/formats/index.js';
import { parseSse } from '../../src/lib/llm/sse.js';
import type { LlmRequest, StreamEvent } from '../../src/lib/llm/types.js';
import { PROVIDERS, type Provider } from '../../src/domain/providers.js';
import { anthropicBody, anthropicEvents, chatBody, chatEvents, responsesBody, responsesEvents, type FakeReply } from '../fakes/llm-wire.js';

const REPLY: FakeReply = { text: 'Hi "there" {x}', toolCalls: [{ id: 'call_9', name: 'lookup', arguments: { q: 'a,b', n: [1, 2], deep: { s: '}{' } } }, { id: 'call_10', name: 'other', arguments: {} }], inputTokens: 5, outputTokens: 9 };
const NATIVE_EVENTS = { openai: chatEvents, 'openai-responses': responsesEvents, anthropic: anthropicEvents };
const NATIVE_BODY = { openai: chatBody, 'openai-responses': responsesBody, anthropic: anthropicBody };

function sseText(events: { event?: string; data: unknown }[]): string {
  return events.map((e) => `${e.event ? `event: ${e.event}\n` : ''}data: ${typeof e.data === 'string' ? e.data : JSON.stringify(e.data)}\n\n`).join('');
}

/** Feeds text to the SSE parser in pieces of `size` bytes, so messages straddle chunk edges. */
async function decodeAll(provider: Provider, text: string, size: number): Promise<StreamEvent[]> {
  async function* chunks() {
    const buf = Buffer.from(text);
    for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
  }
  const dec = FORMATS[provider].decoder();
  const out: StreamEvent[] = [];
  for await (const msg of parseSse(chunks())) out.push(...dec.push(msg));
  out.push(...dec.end());
  return out;
}

function expectReply(events: StreamEvent[], label: string): void {
  const acc = new Accumulator();
  events.forEach((e) => acc.push(e));
  const r = acc.result();
  assert.deepEqual(r.blocks[0], { type: 'text', text: REPLY.text }, label);
  const calls = r.blocks.filter((b) => b.type === 'tool_call');
  assert.deepEqual(calls.map((c) => c.type === 'tool_call' && [c.id, c.name, JSON.parse(c.arguments)]), REPLY.toolCalls!.map((c) => [c.id, c.name, c.arguments]), label);
  assert.equal(r.stop, 'tool_use', label);
  assert.deepEqual(r.usage, { inputTokens: 5, outputTokens: 9 }, label);
}

describe('llm translation', () => {
  for (const from of PROVIDERS) {
    for (const to of PROVIDERS) {
      it(`streams ${from} upstream events out as ${to}, tool arguments intact at any chunking`, async () => {
        for (const size of [1, 7, 4096]) {
          const canonical = await decodeAll(from, sseText(NATIVE_EVENTS[from]('m', REPLY)), size);
          expectReply(canonical, `${from} decoded`);
          const enc = FORMATS[to].encoder({ selected_model: 'x/m', reasoning_effort: null, reason: 'r', conversation_id: 'conv_1' });
          const wire = canonical.map((e) => enc.encode(e)).join('');
          expectReply(await decodeAll(to, wire, size), `${from} → ${to} re-decoded`);
        }
      });

      it(`translates a whole ${from} response into ${to}`, () => {
        const res = FORMATS[from].parseResponse(NATIVE_BODY[from]('m', REPLY));
        const out = FORMATS[to].serializeResponse(res, { selected_model: 'x/m', reasoning_effort: 'low', reason: 'r', conversation_id: 'conv_1' });
        const back = FORMATS[to].parseResponse(out);
        assert.deepEqual(back.blocks, res.blocks);
        assert.equal(back.stop, 'tool_use');
        const routing = to === 'anthropic' ? (out.metadata as Record<string, unknown>).service_routing : out.service_routing;
        assert.equal((routing as Record<string, unknown>).selected_model, 'x/m');
      });
    }
  }

  it('round-trips a request with images, tool calls and results through every format', () => {
    const req: LlmRequest = {
      system: 'sys',
      items: [
        { kind: 'message', role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'AAAA' } }] },
        { kind: 'tool_call', id: 'c1', name: 'f', arguments: '{"a":1}' },
        { kind: 'tool_result', callId: 'c1', content: [{ type: 'text', text: 'done' }] },
        { kind: 'message', role: 'user', content: [{ type: 'text', text: 'next' }] },
      ],
      tools: [{ name: 'f', description: 'd', parameters: { type: 'object', properties: { a: { type: 'integer' } } } }],
      maxTokens: 100,
      stream: false,
    };
    for (const p of PROVIDERS) {
      const body = FORMATS[p].serializeRequest(req, { provider: p, model: 'm', baseUrl: '', apiKey: '' });
      const back = FORMATS[p].parseRequest(body);
      assert.equal(back.system, 'sys', p);
      assert.deepEqual(back.items, req.items, p);
      assert.deepEqual(back.tools, req.tools, p);
    }
  });

  it('strips configuration updates unless the target understands them', () => {
    const req: LlmRequest = { items: [{ kind: 'message', role: 'user', content: [{ type: 'text', text: 'x' }] }, { kind: 'config_update', effort: 'off' }], effort: 'low', stream: false };
    const t = { provider: 'openai-responses' as const, model: 'm', baseUrl: '', apiKey: '' };
    assert.equal((FORMATS['openai-responses'].serializeRequest(req, t).input as unknown[]).length, 1);
    assert.deepEqual((FORMATS['openai-responses'].serializeRequest(req, { ...t, configUpdates: true }).input as unknown[])[1], { type: 'configuration_update', reasoning: { effort: 'none' } });
  });
});
