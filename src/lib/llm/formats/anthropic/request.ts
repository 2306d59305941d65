import type { CacheControl, Item, LlmRequest, Part, ResponseFormat, Target, ToolChoice, ToolDef } from '../../types.js';
import type { Effort } from '../../../../domain/providers.js';
import { asArray, textOf, type Json } from '../format.js';

function partOf(b: Json): Part | null {
  const p = bareOf(b);
  if (p && b.cache_control) p.cache = b.cache_control as CacheControl;
  return p;
}

function bareOf(b: Json): Part | null {
  if (b.type === 'text') return { type: 'text', text: String(b.text ?? '') };
  if (b.type === 'image') {
    const s = (b.source ?? {}) as Json;
    if (s.type === 'url') return { type: 'image', source: { kind: 'url', url: String(s.url) } };
    return { type: 'image', source: { kind: 'base64', mediaType: String(s.media_type), data: String(s.data) } };
  }
  return null;
}

/** A block's cache breakpoint onto the canonical item made of it. */
function withCache<T extends { cache?: CacheControl }>(item: T, b: Json): T {
  if (b.cache_control) item.cache = b.cache_control as CacheControl;
  return item;
}

const partsOf = (content: unknown): Part[] =>
  typeof content === 'string' ? [{ type: 'text', text: content }] : asArray(content).flatMap((b) => partOf(b) ?? []);

/** One messages-API message → canonical items, keeping block order (tool results split out). */
function itemsOf(m: Json): Item[] {
  const role = m.role === 'assistant' ? 'assistant' : 'user';
  if (typeof m.content === 'string') return [{ kind: 'message', role, content: [{ type: 'text', text: m.content }] }];
  const items: Item[] = [];
  let parts: Part[] = [];
  const flush = () => {
    if (parts.length) items.push({ kind: 'message', role, content: parts });
    parts = [];
  };
  for (const b of asArray(m.content)) {
    if (b.type === 'tool_use') {
      flush();
      items.push(withCache<Extract<Item, { kind: 'tool_call' }>>({ kind: 'tool_call', id: String(b.id), name: String(b.name), arguments: JSON.stringify(b.input ?? {}) }, b));
    } else if (b.type === 'tool_result') {
      flush();
      const result = withCache<Extract<Item, { kind: 'tool_result' }>>({ kind: 'tool_result', callId: String(b.tool_use_id), content: partsOf(b.content ?? '') }, b);
      if (b.is_error === true) result.isError = true;
      items.push(result);
    } else {
      const p = partOf(b);
      if (p) parts.push(p);
    }
  }
  flush();
  return items;
}

function toolChoiceOf(v: unknown): ToolChoice | undefined {
  const c = (v ?? {}) as Json;
  if (c.type === 'auto' || c.type === 'none') return c.type;
  if (c.type === 'any') return 'required';
  if (c.type === 'tool') return { name: String(c.name) };
  return undefined;
}

/** `output_config.format`: Anthropic's format has no name, which the OpenAI formats require. */
function responseFormatOf(v: unknown): ResponseFormat | undefined {
  const f = (v as Json | undefined)?.format as Json | null | undefined;
  return f?.type === 'json_schema' ? { type: 'json_schema', name: 'output', schema: f.schema as Json } : undefined;
}

function thinkingOf(v: unknown): LlmRequest['thinking'] {
  const t = (v ?? {}) as Json;
  if (t.type === 'enabled') return { budgetTokens: Number(t.budget_tokens ?? 1024) };
  if (t.type === 'adaptive') return { adaptive: true };
  return undefined;
}

/**
 * The top-level system prompt, then each mid-conversation `system` message's text. Those are taken to the
 * system prompt, as chat's system and developer messages are: only the newest Anthropic models take them in
 * place, and every provider takes a system prompt.
 */
function systemOf(body: Json): Pick<LlmRequest, 'system' | 'systemParts'> {
  const blocks = body.system === undefined ? [] : [partsOf(body.system)];
  for (const m of asArray(body.messages)) if (m.role === 'system') blocks.push(partsOf(m.content));
  if (!blocks.length) return {};
  const system = blocks.map(textOf).join('\n\n');
  // The blocks are kept only when a cache breakpoint sits among them: its place is lost once the text is joined.
  if (!blocks.some((ps) => ps.some((p) => p.cache))) return { system };
  // Each system message starts on its own paragraph, as in `system`; a separate blank block would be refused.
  const systemParts = blocks.flatMap((ps, i) => ps.filter((p) => p.type === 'text').map((p, j) => (i && !j ? { ...p, text: `\n\n${p.text}` } : p)));
  return { system, systemParts };
}

/** Messages request body → canonical request. The body has passed the router's `messagesBody` schema (nested blocks included). */
export function parseAnthropicRequest(body: Json): LlmRequest {
  const req: LlmRequest = {
    ...systemOf(body),
    items: asArray(body.messages).flatMap((m) => (m.role === 'system' ? [] : itemsOf(m))),
    tools: body.tools === undefined ? undefined : asArray(body.tools).map((t) => withCache<ToolDef>({ name: String(t.name), description: t.description as string | undefined, parameters: (t.input_schema as Json) ?? { type: 'object' } }, t)),
    toolChoice: toolChoiceOf(body.tool_choice),
    parallelToolCalls: (body.tool_choice as Json | undefined)?.disable_parallel_tool_use === true ? false : undefined,
    responseFormat: responseFormatOf(body.output_config),
    maxTokens: body.max_tokens as number,
    temperature: body.temperature as number | undefined,
    topP: body.top_p as number | undefined,
    stop: body.stop_sequences as string[] | undefined,
    thinking: thinkingOf(body.thinking),
    stream: body.stream === true,
  };
  if (body.cache_control) req.cacheControl = body.cache_control as CacheControl;
  return req;
}

const BUDGET: Record<Effort, number> = { off: 0, minimal: 1024, low: 2048, medium: 8192, high: 16384, xhigh: 32000, max: 64000 };
/** `output_config.effort` has no `minimal`; its lowest level stands in for it. */
const ADAPTIVE_EFFORT: Record<Exclude<Effort, 'off'>, string> = { minimal: 'low', low: 'low', medium: 'medium', high: 'high', xhigh: 'xhigh', max: 'max' };

function blockOf(p: Part): Json {
  const b = bareBlockOf(p);
  if (p.cache) b.cache_control = p.cache;
  return b;
}

function bareBlockOf(p: Part): Json {
  if (p.type === 'text') return { type: 'text', text: p.text };
  if (p.type === 'document') return { type: 'document', source: { type: 'base64', media_type: p.mediaType, data: p.data }, title: p.filename };
  const s = p.source;
  return { type: 'image', source: s.kind === 'url' ? { type: 'url', url: s.url } : { type: 'base64', media_type: s.mediaType, data: s.data } };
}

/** Anthropic refuses an empty or whitespace-only text block (400 "text content blocks must be non-empty"), which the other formats send freely (a chat tool result of ""). */
const blank = (p: Part) => p.type === 'text' && p.text.trim() === '';

/** Canonical items → alternating user/assistant messages (consecutive same-role items merge). */
function messagesOut(items: Item[]): Json[] {
  const out: { role: string; content: Json[] }[] = [];
  const push = (role: string, block: Json) => {
    const last = out[out.length - 1];
    if (last?.role === role) last.content.push(block);
    else out.push({ role, content: [block] });
  };
  for (const it of items) {
    if (it.kind === 'message') {
      for (const p of it.content) if (!blank(p)) push(it.role, blockOf(p));
    } else if (it.kind === 'tool_call') push('assistant', cacheOut({ type: 'tool_use', id: it.id, name: it.name, input: safeJson(it.arguments) }, it.cache));
    else if (it.kind === 'tool_result') {
      const block: Json = { type: 'tool_result', tool_use_id: it.callId };
      const content = it.content.filter((p) => !blank(p));
      if (content.length) block.content = content.map(blockOf);
      if (it.isError) block.is_error = true;
      push('user', cacheOut(block, it.cache));
    }
  }
  return out;
}

function cacheOut(block: Json, cache: CacheControl | undefined): Json {
  if (cache) block.cache_control = cache;
  return block;
}

function safeJson(s: string): unknown {
  try {
    const v = JSON.parse(s || '{}');
    return v && typeof v === 'object' ? v : {};
  } catch {
    return {};
  }
}

/** Parallel tool calls are a flag of Anthropic's tool choice; `none` has no such flag. */
function toolChoiceOut(req: LlmRequest): Json | undefined {
  const serial = req.parallelToolCalls === false && (req.tools?.length ?? 0) > 0;
  if (!req.toolChoice && !serial) return undefined;
  const c = req.toolChoice ?? 'auto';
  const out: Json = typeof c === 'object' ? { type: 'tool', name: c.name } : { type: c === 'required' ? 'any' : c };
  if (serial && out.type !== 'none') out.disable_parallel_tool_use = true;
  return out;
}

export function serializeAnthropicRequest(req: LlmRequest, target: Target): Json {
  const maxTokens = req.maxTokens ?? 4096;
  const body: Json = { model: target.model, max_tokens: maxTokens, messages: messagesOut(req.items) };
  if (req.systemParts) body.system = req.systemParts.map(blockOf);
  else if (req.system) body.system = req.system;
  if (req.tools?.length) body.tools = req.tools.map((t) => cacheOut({ name: t.name, description: t.description, input_schema: t.parameters }, t.cache));
  if (req.cacheControl) body.cache_control = req.cacheControl;
  const choice = toolChoiceOut(req);
  if (choice) body.tool_choice = choice;
  if (req.responseFormat?.type === 'json_schema' && req.responseFormat.schema) body.output_config = { format: { type: 'json_schema', schema: req.responseFormat.schema } };
  if (target.adaptiveThinking) {
    // These models refuse a thinking budget: thinking asked for in any form is adaptive, and the effort says how much.
    const effort = req.effort && req.effort !== 'off' ? ADAPTIVE_EFFORT[req.effort] : undefined;
    if (req.thinking || effort) body.thinking = { type: 'adaptive' };
    if (effort) body.output_config = { ...(body.output_config as Json | undefined), effort };
  } else if (req.thinking && 'adaptive' in req.thinking) body.thinking = { type: 'adaptive' };
  else {
    // Anthropic has no effort knob here: a level above `off` runs as an extended-thinking budget.
    const asked = req.thinking && 'budgetTokens' in req.thinking ? req.thinking.budgetTokens : undefined;
    const budget = Math.min(asked ?? BUDGET[req.effort ?? 'off'], maxTokens - 1);
    if (budget >= 1024) body.thinking = { type: 'enabled', budget_tokens: budget };
  }
  if (req.temperature !== undefined && !body.thinking) body.temperature = req.temperature;
  if (req.topP !== undefined && !body.thinking) body.top_p = req.topP;
  if (req.stop) body.stop_sequences = req.stop;
  if (req.stream) body.stream = true;
  return body;
}
