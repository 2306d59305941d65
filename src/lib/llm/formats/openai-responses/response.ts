import type { LlmResponse, OutBlock, StopReason, ToolDef, Usage } from '../../types.js';
import { asArray, newId, type Json, type RoutingInfo } from '../format.js';

export function parseResponsesResponse(body: Json): LlmResponse {
  const blocks: OutBlock[] = [];
  for (const it of asArray(body.output)) {
    if (it.type === 'message') {
      const text = asArray(it.content).map((c) => (c.type === 'output_text' ? String(c.text ?? '') : '')).join('');
      if (text) blocks.push({ type: 'text', text });
    } else if (it.type === 'function_call') {
      blocks.push({ type: 'tool_call', id: String(it.call_id), name: String(it.name), arguments: String(it.arguments ?? '{}') });
    }
  }
  return { id: String(body.id ?? newId('resp_')), model: String(body.model ?? ''), blocks, stop: stopOf(body, blocks), usage: usageOf(body.usage as Json | undefined) };
}

export function stopOf(body: Json, blocks: { type: string }[]): StopReason {
  if (body.status === 'incomplete') return (body.incomplete_details as Json)?.reason === 'content_filter' ? 'refusal' : 'max_tokens';
  return blocks.some((b) => b.type === 'tool_call' || b.type === 'function_call') ? 'tool_use' : 'end';
}

/** `input_tokens` counts cached tokens too, as the canonical count does; `input_tokens_details.cached_tokens` says how many of them. */
export function usageOf(u: Json | undefined): Usage {
  const usage: Usage = { inputTokens: Number(u?.input_tokens ?? 0), outputTokens: Number(u?.output_tokens ?? 0) };
  const read = Number((u?.input_tokens_details as Json | null | undefined)?.cached_tokens ?? 0);
  if (read) usage.cacheReadTokens = read;
  return usage;
}

/** The request's tool a call names, when the client declared it as custom or namespaced (the model knows it by a flat name). */
export function declaredTool(tools: ToolDef[] | undefined, name: string): ToolDef | undefined {
  const t = tools?.find((x) => x.name === name);
  return t && (t.custom || t.namespace !== undefined) ? t : undefined;
}

/** A custom tool's `input` text from the function-call arguments it was called with (`{"input": ...}`). */
export function customInput(args: string): string {
  try {
    const input = (JSON.parse(args || '{}') as Json).input;
    return typeof input === 'string' ? input : input === undefined ? '' : JSON.stringify(input);
  } catch {
    return '';
  }
}

/** An output item; a call to a custom or namespaced tool is written back the way the client declared that tool. */
export function outputItem(b: OutBlock, id: string, status = 'completed', tools?: ToolDef[]): Json {
  if (b.type === 'text') return { id, type: 'message', status, role: 'assistant', content: [{ type: 'output_text', text: b.text, annotations: [], logprobs: [] }] };
  const t = declaredTool(tools, b.name);
  const name = t?.localName ?? b.name;
  const namespace = t?.namespace !== undefined ? { namespace: t.namespace } : {};
  if (t?.custom) return { id, type: 'custom_tool_call', status, call_id: b.id, name, ...namespace, input: customInput(b.arguments) };
  return { id, type: 'function_call', status, call_id: b.id, name, ...namespace, arguments: b.arguments };
}

/** The response object, shared by the non-streaming result and the stream's `response.*` events. */
export function responseObject(id: string, model: string, output: Json[], stop: StopReason | null, usage: Usage | null, routing: RoutingInfo | null): Json {
  const status = stop === null ? 'in_progress' : stop === 'max_tokens' || stop === 'refusal' ? 'incomplete' : 'completed';
  const out: Json = {
    id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: stop === 'refusal' ? 'content_filter' : 'max_output_tokens' } : null,
    model,
    output,
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: [],
    usage: usage && {
      input_tokens: usage.inputTokens,
      input_tokens_details: { cached_tokens: usage.cacheReadTokens ?? 0 },
      output_tokens: usage.outputTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: usage.inputTokens + usage.outputTokens,
    },
  };
  if (routing && stop !== null) out.service_routing = routing;
  return out;
}

export function serializeResponsesResponse(res: LlmResponse, routing: RoutingInfo | null, tools?: ToolDef[]): Json {
  const id = res.id.startsWith('resp_') ? res.id : `resp_${res.id}`;
  const output = res.blocks.map((b, i) => outputItem(b, `${b.type === 'text' ? 'msg' : 'fc'}_${id.slice(5)}_${i}`, 'completed', tools));
  return responseObject(id, routing?.selected_model ?? res.model, output, res.stop, res.usage, routing);
}
