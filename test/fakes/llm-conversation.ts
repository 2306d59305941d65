import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { FakeLlmUpstream } from './llm-upstream.js';

/**
 * One canned conversation (system text, a past tool call and its result, a
 * new user turn, one tool) written in each client format, and drivers that
 * send it through the official SDKs and reduce the answer to one shape.
 */
export type IngressKind = 'messages' | 'chat' | 'responses';

export const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'Weather for a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city'] },
};

export const SYSTEM = 'You are terse.';

export interface Normalized {
  text: string;
  toolCalls: { id: string; name: string; args: unknown }[];
  routing: Record<string, unknown> | undefined;
  stop: string;
}

type Json = Record<string, any>;

export function chatRequest(extra: Json = {}): Json {
  return {
    model: 'service/routing',
    messages: [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_0', content: 'sunny' },
      { role: 'user', content: 'And for 3 days?' },
    ],
    tools: [{ type: 'function', function: WEATHER_TOOL }],
    ...extra,
  };
}

export function responsesRequest(extra: Json = {}): Json {
  return {
    model: 'service/routing',
    instructions: SYSTEM,
    input: [
      { role: 'user', content: 'Weather in Paris?' },
      { type: 'function_call', call_id: 'call_0', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call_output', call_id: 'call_0', output: 'sunny' },
      { role: 'user', content: 'And for 3 days?' },
    ],
    tools: [{ type: 'function', ...WEATHER_TOOL }],
    ...extra,
  };
}

export function messagesRequest(extra: Json = {}): Json {
  return {
    model: 'service/routing',
    max_tokens: 256,
    system: SYSTEM,
    messages: [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'call_0', name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_0', content: 'sunny' }, { type: 'text', text: 'And for 3 days?' }] },
    ],
    tools: [{ name: WEATHER_TOOL.name, description: WEATHER_TOOL.description, input_schema: WEATHER_TOOL.parameters }],
    ...extra,
  };
}

/** OpenAI SDK against a router: chat at /{id}/chat/completions, responses at /{id}/v1/responses. */
export function openaiClient(routerUrl: string, key: string, routerId: string | null, kind: 'chat' | 'responses'): OpenAI {
  const base = routerId === null ? `${routerUrl}/v1` : kind === 'chat' ? `${routerUrl}/${routerId}` : `${routerUrl}/${routerId}/v1`;
  return new OpenAI({ apiKey: key, baseURL: base, maxRetries: 0 });
}

/** Anthropic SDK against a router; the SDK always asks for /v1/messages, so a specific router is reached by rewriting to /{id}/messages. */
export function anthropicClient(routerUrl: string, key: string, routerId: string | null): Anthropic {
  const rewrite: typeof fetch = (input, init) => fetch(String(input).replace('/v1/messages', `/${routerId}/messages`), init);
  return new Anthropic({ apiKey: null, authToken: key, baseURL: routerUrl, maxRetries: 0, ...(routerId ? { fetch: rewrite } : {}) });
}

const parse = (s: string) => (s ? JSON.parse(s) : {});

async function viaChat(c: OpenAI, stream: boolean, extra: Json): Promise<Normalized> {
  if (!stream) {
    const r = (await c.chat.completions.create(chatRequest(extra) as any)) as Json;
    const m = r.choices[0].message;
    return { text: m.content ?? '', toolCalls: (m.tool_calls ?? []).map((t: Json) => ({ id: t.id, name: t.function.name, args: parse(t.function.arguments) })), routing: r.service_routing, stop: r.choices[0].finish_reason };
  }
  const out: Normalized = { text: '', toolCalls: [], routing: undefined, stop: '' };
  const raw: Record<number, { id: string; name: string; args: string }> = {};
  for await (const ch of (await c.chat.completions.create(chatRequest({ ...extra, stream: true }) as any)) as any) {
    if (ch.service_routing) out.routing = ch.service_routing;
    const choice = ch.choices[0];
    if (!choice) continue;
    if (choice.delta.content) out.text += choice.delta.content;
    for (const t of choice.delta.tool_calls ?? []) {
      const e = (raw[t.index] ??= { id: '', name: '', args: '' });
      if (t.id) e.id = t.id;
      if (t.function?.name) e.name = t.function.name;
      e.args += t.function?.arguments ?? '';
    }
    if (choice.finish_reason) out.stop = choice.finish_reason;
  }
  out.toolCalls = Object.values(raw).map((t) => ({ id: t.id, name: t.name, args: parse(t.args) }));
  return out;
}

async function viaResponses(c: OpenAI, stream: boolean, extra: Json): Promise<Normalized> {
  const fromResponse = (r: Json): Normalized => ({
    text: r.output.filter((o: Json) => o.type === 'message').flatMap((o: Json) => o.content.map((p: Json) => p.text)).join(''),
    toolCalls: r.output.filter((o: Json) => o.type === 'function_call').map((o: Json) => ({ id: o.call_id, name: o.name, args: parse(o.arguments) })),
    routing: r.service_routing,
    stop: r.status,
  });
  if (!stream) return fromResponse((await c.responses.create(responsesRequest(extra) as any)) as Json);
  let text = '';
  const args: Record<number, string> = {};
  let final: Json | null = null;
  for await (const ev of (await c.responses.create(responsesRequest({ ...extra, stream: true }) as any)) as any) {
    if (ev.type === 'response.output_text.delta') text += ev.delta;
    if (ev.type === 'response.function_call_arguments.delta') args[ev.output_index] = (args[ev.output_index] ?? '') + ev.delta;
    if (ev.type === 'response.completed') final = ev.response;
  }
  const out = fromResponse(final!);
  // The deltas themselves must add up to what the final event says.
  if (out.text !== text) throw new Error(`streamed text ${JSON.stringify(text)} differs from the final ${JSON.stringify(out.text)}`);
  out.toolCalls = out.toolCalls.map((t, i) => ({ ...t, args: parse(Object.values(args)[i] ?? '') }));
  return out;
}

async function viaMessages(c: Anthropic, stream: boolean, extra: Json): Promise<Normalized> {
  if (!stream) {
    const m = (await c.messages.create(messagesRequest(extra) as any)) as Json;
    return {
      text: m.content.filter((b: Json) => b.type === 'text').map((b: Json) => b.text).join(''),
      toolCalls: m.content.filter((b: Json) => b.type === 'tool_use').map((b: Json) => ({ id: b.id, name: b.name, args: b.input })),
      routing: m.metadata?.service_routing,
      stop: m.stop_reason,
    };
  }
  const s = c.messages.stream(messagesRequest(extra) as any);
  let routing: Json | undefined;
  s.on('streamEvent', (ev: Json) => {
    if (ev.type === 'message_stop') routing = ev.metadata?.service_routing;
  });
  const m = (await s.finalMessage()) as Json;
  return {
    text: m.content.filter((b: Json) => b.type === 'text').map((b: Json) => b.text).join(''),
    toolCalls: m.content.filter((b: Json) => b.type === 'tool_use').map((b: Json) => ({ id: b.id, name: b.name, args: b.input })),
    routing,
    stop: m.stop_reason,
  };
}

/** Sends the canned conversation through the SDK of `kind` and normalizes the answer. */
export function converse(kind: IngressKind, routerUrl: string, key: string, routerId: string | null, stream: boolean, extra: Json = {}): Promise<Normalized> {
  if (kind === 'messages') return viaMessages(anthropicClient(routerUrl, key, routerId), stream, extra);
  const c = openaiClient(routerUrl, key, routerId, kind);
  return kind === 'chat' ? viaChat(c, stream, extra) : viaResponses(c, stream, extra);
}

/** A router candidate served by the fake upstream with the FAKE_KEY credential. */
export function candidate(fake: FakeLlmUpstream, provider: 'openai' | 'openai-responses' | 'anthropic', model: string, extra: Record<string, unknown> = {}) {
  return {
    model,
    provider,
    upstream_model: `up-${model.replace(/\W/g, '-')}`,
    base_url: provider === 'anthropic' ? fake.anthropicBase : fake.openaiBase,
    api_key_credential: 'FAKE_KEY',
    reasoning_efforts: ['off', 'low', 'medium', 'high'],
    ...extra,
  };
}
