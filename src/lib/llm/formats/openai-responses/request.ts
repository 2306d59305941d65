import type { Item, LlmRequest, Part, Target, ToolChoice, ToolDef } from '../../types.js';
import type { Effort } from '../../../../domain/providers.js';
import { asArray, imageFromUrl, jsonSchemaFields, responseFormatIn, textOf, urlOfImage, type Json } from '../format.js';

/** Responses effort `none` is the canonical `off`. */
export const effortIn = (v: unknown): Effort | undefined => (v === undefined || v === null ? undefined : v === 'none' ? 'off' : (v as Effort));
export const effortOut = (e: Effort): string => (e === 'off' ? 'none' : e);

/** Namespaced tools are flattened to `<namespace>__<tool>`, which every provider accepts as a name. */
export const NAMESPACE_SEP = '__';

function partsOf(content: unknown): Part[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  const out: Part[] = [];
  for (const p of asArray(content)) {
    if (p.type === 'input_text' || p.type === 'output_text' || p.type === 'text') out.push({ type: 'text', text: String(p.text ?? '') });
    else if (p.type === 'input_image' && typeof p.image_url === 'string') out.push(imageFromUrl(p.image_url));
  }
  return out;
}

/** A call's flat tool name: a call to a namespaced tool names its namespace beside the tool's own name. */
const callName = (it: Json): string => (typeof it.namespace === 'string' && it.namespace !== '' ? it.namespace + NAMESPACE_SEP : '') + String(it.name);

function itemOf(it: Json, system: string[]): Item | null {
  const type = it.type ?? (it.role ? 'message' : undefined);
  switch (type) {
    case 'message':
      if (it.role === 'system' || it.role === 'developer') {
        system.push(textOf(partsOf(it.content)));
        return null;
      }
      return { kind: 'message', role: it.role === 'assistant' ? 'assistant' : 'user', content: partsOf(it.content) };
    case 'function_call':
      return { kind: 'tool_call', id: String(it.call_id), name: callName(it), arguments: String(it.arguments ?? '{}') };
    case 'custom_tool_call':
      return { kind: 'tool_call', id: String(it.call_id), name: callName(it), arguments: JSON.stringify({ input: String(it.input ?? '') }) };
    case 'function_call_output':
    case 'custom_tool_call_output':
      return { kind: 'tool_result', callId: String(it.call_id), content: partsOf(it.output ?? '') };
    case 'configuration_update':
      return { kind: 'config_update', effort: effortIn((it.reasoning as Json)?.effort) ?? 'medium' };
    default:
      return null; // reasoning items and the like carry nothing another model can use
  }
}

/** The tools as function tools; each remembers whether it was custom or namespaced, for its calls' way back. */
function toolsOf(tools: Json[], namespace?: string): ToolDef[] {
  return tools.flatMap((t): ToolDef[] => {
    if (t.type === 'namespace') return toolsOf(asArray(t.tools), String(t.name));
    const local = String(t.name);
    const named: Pick<ToolDef, 'name' | 'namespace' | 'localName'> = namespace === undefined ? { name: local } : { name: namespace + NAMESPACE_SEP + local, namespace, localName: local };
    const description = t.description as string | undefined;
    if (t.type === 'custom') return [{ ...named, description, parameters: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] }, custom: true }];
    if (t.type === 'function') return [{ ...named, description, parameters: (t.parameters as Json) ?? { type: 'object', properties: {} } }];
    return [];
  });
}

function toolChoiceOf(v: unknown): ToolChoice | undefined {
  if (v === 'auto' || v === 'none' || v === 'required') return v;
  const name = (v as Json | undefined)?.name;
  return typeof name === 'string' ? { name } : undefined;
}

/** Responses request body → canonical request. The body has passed the router's `responsesBody` schema (input items included). */
export function parseResponsesRequest(body: Json): LlmRequest {
  const system: string[] = typeof body.instructions === 'string' && body.instructions ? [body.instructions] : [];
  const items = typeof body.input === 'string' ? [{ kind: 'message', role: 'user', content: [{ type: 'text', text: body.input }] } as Item] : asArray(body.input).flatMap((it) => itemOf(it, system) ?? []);
  return {
    system: system.length ? system.join('\n\n') : undefined,
    items,
    tools: body.tools === undefined ? undefined : toolsOf(asArray(body.tools)),
    toolChoice: toolChoiceOf(body.tool_choice),
    parallelToolCalls: typeof body.parallel_tool_calls === 'boolean' ? body.parallel_tool_calls : undefined,
    responseFormat: responseFormatIn((body.text as Json | undefined)?.format as Json | undefined, (f) => f),
    maxTokens: body.max_output_tokens as number | undefined,
    temperature: (body.temperature ?? undefined) as number | undefined,
    topP: (body.top_p ?? undefined) as number | undefined,
    effort: effortIn((body.reasoning as Json | undefined)?.effort),
    stream: body.stream === true,
  };
}

function itemOut(it: Item, target: Target): Json | null {
  switch (it.kind) {
    case 'message': {
      const content = it.content.map((p) => {
        if (p.type === 'image') return { type: 'input_image', image_url: urlOfImage(p) };
        if (p.type === 'document') return { type: 'input_file', filename: p.filename, file_data: `data:${p.mediaType};base64,${p.data}` };
        return { type: it.role === 'assistant' ? 'output_text' : 'input_text', text: p.text };
      });
      return { type: 'message', role: it.role, content };
    }
    case 'tool_call':
      return { type: 'function_call', call_id: it.id, name: it.name, arguments: it.arguments };
    case 'tool_result':
      return { type: 'function_call_output', call_id: it.callId, output: textOf(it.content) };
    case 'config_update':
      return target.configUpdates ? { type: 'configuration_update', reasoning: { effort: effortOut(it.effort) } } : null;
  }
}

export function serializeResponsesRequest(req: LlmRequest, target: Target): Json {
  const body: Json = { model: target.model, input: req.items.flatMap((it) => itemOut(it, target) ?? []), store: false };
  if (req.system) body.instructions = req.system;
  if (req.tools?.length) body.tools = req.tools.map((t) => ({ type: 'function', name: t.name, description: t.description, parameters: t.parameters }));
  if (req.toolChoice) body.tool_choice = typeof req.toolChoice === 'string' ? req.toolChoice : { type: 'function', name: req.toolChoice.name };
  if (req.parallelToolCalls !== undefined && req.tools?.length) body.parallel_tool_calls = req.parallelToolCalls;
  const f = req.responseFormat;
  if (f) body.text = { format: f.type === 'json_schema' ? { type: 'json_schema', ...jsonSchemaFields(f) } : { type: f.type } };
  if (req.maxTokens !== undefined) body.max_output_tokens = req.maxTokens;
  if (req.temperature !== undefined) body.temperature = req.temperature;
  if (req.topP !== undefined) body.top_p = req.topP;
  if (req.effort) body.reasoning = { effort: effortOut(req.effort) };
  if (req.stream) body.stream = true;
  return body;
}
