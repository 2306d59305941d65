import type { Item, LlmRequest, Part, Target, ToolChoice } from '../../types.js';
import type { Effort } from '../../../../domain/providers.js';
import { asArray, imageFromUrl, jsonSchemaFields, responseFormatIn, textOf, urlOfImage, type Json } from '../format.js';

function partsOf(content: unknown): Part[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  const out: Part[] = [];
  for (const p of asArray(content)) {
    if (p.type === 'text') out.push({ type: 'text', text: String(p.text ?? '') });
    else if (p.type === 'image_url') out.push(imageFromUrl(String((p.image_url as Json)?.url ?? '')));
  }
  return out;
}

function toolChoiceOf(v: unknown): ToolChoice | undefined {
  if (v === 'auto' || v === 'none' || v === 'required') return v;
  const name = ((v as Json)?.function as Json)?.name;
  return typeof name === 'string' ? { name } : undefined;
}

function itemsOf(messages: Json[], system: string[]): Item[] {
  const items: Item[] = [];
  for (const m of messages) {
    if (m.role === 'system' || m.role === 'developer') system.push(textOf(partsOf(m.content)));
    else if (m.role === 'tool') items.push({ kind: 'tool_result', callId: String(m.tool_call_id ?? ''), content: partsOf(m.content) });
    else if (m.role === 'user') items.push({ kind: 'message', role: 'user', content: partsOf(m.content) });
    else if (m.role === 'assistant') {
      const content = partsOf(m.content ?? '').filter((p) => p.type !== 'text' || p.text !== '');
      if (content.length > 0) items.push({ kind: 'message', role: 'assistant', content });
      for (const tc of asArray(m.tool_calls)) {
        const fn = (tc.function ?? {}) as Json;
        items.push({ kind: 'tool_call', id: String(tc.id ?? ''), name: String(fn.name ?? ''), arguments: String(fn.arguments ?? '{}') });
      }
    }
  }
  return items;
}

/** Chat completions request body → canonical request. The body has passed the router's `chatBody` schema (nested parts included). */
export function parseChatRequest(body: Json): LlmRequest {
  const system: string[] = [];
  const items = itemsOf(asArray(body.messages), system);
  const stop = typeof body.stop === 'string' ? [body.stop] : Array.isArray(body.stop) ? (body.stop as string[]) : undefined;
  return {
    system: system.length ? system.join('\n\n') : undefined,
    items,
    tools: body.tools === undefined ? undefined : asArray(body.tools).map((t) => {
      const fn = (t.function ?? {}) as Json;
      return { name: String(fn.name), description: fn.description as string | undefined, parameters: (fn.parameters as Json) ?? { type: 'object', properties: {} } };
    }),
    toolChoice: toolChoiceOf(body.tool_choice),
    parallelToolCalls: typeof body.parallel_tool_calls === 'boolean' ? body.parallel_tool_calls : undefined,
    responseFormat: responseFormatIn(body.response_format as Json | undefined, (f) => (f.json_schema ?? {}) as Json),
    maxTokens: (body.max_completion_tokens ?? body.max_tokens) as number | undefined,
    temperature: (body.temperature ?? undefined) as number | undefined,
    topP: (body.top_p ?? undefined) as number | undefined,
    stop,
    effort: body.reasoning_effort as Effort | undefined,
    stream: body.stream === true,
  };
}

function contentOut(parts: Part[]): unknown {
  if (parts.every((p) => p.type === 'text')) return textOf(parts);
  return parts.map((p) => {
    if (p.type === 'text') return { type: 'text', text: p.text };
    if (p.type === 'document') return { type: 'file', file: { filename: p.filename, file_data: `data:${p.mediaType};base64,${p.data}` } };
    return { type: 'image_url', image_url: { url: urlOfImage(p) } };
  });
}

function messagesOut(req: LlmRequest): Json[] {
  const out: Json[] = req.system ? [{ role: 'system', content: req.system }] : [];
  let assistant: Json | null = null;
  for (const it of req.items) {
    if (it.kind === 'tool_call') {
      if (!assistant) out.push((assistant = { role: 'assistant', content: null }));
      ((assistant.tool_calls ??= []) as Json[]).push({ id: it.id, type: 'function', function: { name: it.name, arguments: it.arguments } });
      continue;
    }
    assistant = null;
    if (it.kind === 'message' && it.role === 'assistant') out.push((assistant = { role: 'assistant', content: contentOut(it.content) }));
    else if (it.kind === 'message') out.push({ role: 'user', content: contentOut(it.content) });
    else if (it.kind === 'tool_result') out.push({ role: 'tool', tool_call_id: it.callId, content: textOf(it.content) });
    // config_update items have no chat equivalent; the effort they set is sent as reasoning_effort.
  }
  return out;
}

/** Canonical request → chat completions body for `target`. */
export function serializeChatRequest(req: LlmRequest, target: Target): Json {
  const body: Json = { model: target.model, messages: messagesOut(req) };
  if (req.tools?.length) body.tools = req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
  if (req.toolChoice) body.tool_choice = typeof req.toolChoice === 'string' ? req.toolChoice : { type: 'function', function: { name: req.toolChoice.name } };
  // OpenAI takes parallel_tool_calls only beside tools.
  if (req.parallelToolCalls !== undefined && req.tools?.length) body.parallel_tool_calls = req.parallelToolCalls;
  const f = req.responseFormat;
  if (f) body.response_format = f.type === 'json_schema' ? { type: 'json_schema', json_schema: jsonSchemaFields(f) } : { type: f.type };
  if (req.maxTokens !== undefined) body.max_completion_tokens = req.maxTokens;
  if (req.temperature !== undefined) body.temperature = req.temperature;
  if (req.topP !== undefined) body.top_p = req.topP;
  if (req.stop) body.stop = req.stop;
  if (req.effort) body.reasoning_effort = req.effort === 'off' ? 'none' : req.effort;
  if (req.stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return body;
}
