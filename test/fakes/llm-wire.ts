/**
 * Native answers of the three vendor APIs, as a fake upstream sends them:
 * whole JSON bodies, and SSE event lists in each vendor's exact event format.
 */
export interface FakeToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

export interface FakeReply {
  text?: string;
  toolCalls?: FakeToolCall[];
  /** Prompt tokens neither read from nor written to the prompt cache (Anthropic's input_tokens). */
  inputTokens?: number;
  outputTokens?: number;
  /** Prompt tokens read from the prompt cache: each vendor reports them its own way (see `usage`). */
  cacheReadTokens?: number;
  /** Prompt tokens written to the cache: Anthropic reports them apart, OpenAI as ordinary prompt tokens. */
  cacheWriteTokens?: number;
}

type Json = Record<string, unknown>;
type Sse = { event?: string; data: unknown };

/** Splits a string into small pieces so every consumer must reassemble deltas. */
export function pieces(s: string, size = 4): string[] {
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out.length ? out : [''];
}

/**
 * One prompt's counts, as each vendor reports them: Anthropic's input_tokens leaves out cache reads and writes (given
 * in cache_read_input_tokens and cache_creation_input_tokens), OpenAI's prompt and input tokens count them all, with
 * the reads also in cached_tokens. `prompt` is OpenAI's count.
 */
function usage(r: FakeReply) {
  const input = r.inputTokens ?? 11;
  const read = r.cacheReadTokens ?? 0;
  const write = r.cacheWriteTokens ?? 0;
  return { input, output: r.outputTokens ?? 7, read, write, prompt: input + read + write };
}

const chatUsage = (u: ReturnType<typeof usage>): Json => ({ prompt_tokens: u.prompt, completion_tokens: u.output, total_tokens: u.prompt + u.output, prompt_tokens_details: { cached_tokens: u.read, audio_tokens: 0 } });
const anthropicUsage = (u: ReturnType<typeof usage>, output: number): Json => ({ input_tokens: u.input, cache_creation_input_tokens: u.write, cache_read_input_tokens: u.read, output_tokens: output });

export function chatBody(model: string, r: FakeReply): Json {
  const calls = (r.toolCalls ?? []).map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments) } }));
  const u = usage(r);
  return {
    id: 'chatcmpl-fake1',
    object: 'chat.completion',
    created: 1,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: r.text ?? null, ...(calls.length ? { tool_calls: calls } : {}) }, finish_reason: calls.length ? 'tool_calls' : 'stop', logprobs: null }],
    usage: chatUsage(u),
  };
}

/** One chat-completions stream chunk. */
export function chatChunk(model: string, delta: Json, finish: string | null = null): Sse {
  return { data: { id: 'chatcmpl-fake1', object: 'chat.completion.chunk', created: 1, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] } };
}

export function chatEvents(model: string, r: FakeReply): Sse[] {
  const base = { id: 'chatcmpl-fake1', object: 'chat.completion.chunk', created: 1, model };
  const chunk = (delta: Json, finish: string | null = null) => chatChunk(model, delta, finish);
  const out: Sse[] = [chunk({ role: 'assistant', content: '' })];
  for (const p of r.text ? pieces(r.text) : []) out.push(chunk({ content: p }));
  (r.toolCalls ?? []).forEach((c, i) => {
    out.push(chunk({ tool_calls: [{ index: i, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] }));
    for (const p of pieces(JSON.stringify(c.arguments))) out.push(chunk({ tool_calls: [{ index: i, function: { arguments: p } }] }));
  });
  out.push(chunk({}, r.toolCalls?.length ? 'tool_calls' : 'stop'));
  const u = usage(r);
  out.push({ data: { ...base, choices: [], usage: chatUsage(u) } });
  out.push({ data: '[DONE]' });
  return out;
}

export function anthropicBody(model: string, r: FakeReply): Json {
  const content: Json[] = [];
  if (r.text) content.push({ type: 'text', text: r.text });
  for (const c of r.toolCalls ?? []) content.push({ type: 'tool_use', id: c.id, name: c.name, input: c.arguments });
  const u = usage(r);
  return { id: 'msg_fake1', type: 'message', role: 'assistant', model, content, stop_reason: r.toolCalls?.length ? 'tool_use' : 'end_turn', stop_sequence: null, usage: anthropicUsage(u, u.output) };
}

export function anthropicEvents(model: string, r: FakeReply): Sse[] {
  const u = usage(r);
  const ev = (type: string, body: Json): Sse => ({ event: type, data: { type, ...body } });
  const out: Sse[] = [ev('message_start', { message: { id: 'msg_fake1', type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: anthropicUsage(u, 1) } }), ev('ping', {})];
  let index = 0;
  if (r.text) {
    out.push(ev('content_block_start', { index, content_block: { type: 'text', text: '' } }));
    for (const p of pieces(r.text)) out.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text: p } }));
    out.push(ev('content_block_stop', { index: index++ }));
  }
  for (const c of r.toolCalls ?? []) {
    out.push(ev('content_block_start', { index, content_block: { type: 'tool_use', id: c.id, name: c.name, input: {} } }));
    for (const p of pieces(JSON.stringify(c.arguments))) out.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: p } }));
    out.push(ev('content_block_stop', { index: index++ }));
  }
  out.push(ev('message_delta', { delta: { stop_reason: r.toolCalls?.length ? 'tool_use' : 'end_turn', stop_sequence: null }, usage: anthropicUsage(u, u.output) }));
  out.push(ev('message_stop', {}));
  return out;
}

function responsesOutput(r: FakeReply): Json[] {
  const out: Json[] = [];
  if (r.text) out.push({ id: 'msg_fake1', type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: r.text, annotations: [] }] });
  for (const c of r.toolCalls ?? []) out.push({ id: `fc_${c.id}`, type: 'function_call', status: 'completed', call_id: c.id, name: c.name, arguments: JSON.stringify(c.arguments) });
  return out;
}

export function responsesBody(model: string, r: FakeReply): Json {
  const u = usage(r);
  const counts = { input_tokens: u.prompt, input_tokens_details: { cached_tokens: u.read }, output_tokens: u.output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: u.prompt + u.output };
  return { id: 'resp_fake1', object: 'response', created_at: 1, status: 'completed', model, output: responsesOutput(r), usage: counts };
}

export function responsesEvents(model: string, r: FakeReply): Sse[] {
  let seq = 0;
  const ev = (type: string, body: Json): Sse => ({ event: type, data: { type, sequence_number: seq++, ...body } });
  const shell = { id: 'resp_fake1', object: 'response', created_at: 1, status: 'in_progress', model, output: [] };
  const out: Sse[] = [ev('response.created', { response: shell }), ev('response.in_progress', { response: shell })];
  const items = responsesOutput(r);
  items.forEach((item, output_index) => {
    if (item.type === 'message') {
      out.push(ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', content: [] } }));
      out.push(ev('response.content_part.added', { item_id: item.id, output_index, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } }));
      for (const p of pieces(r.text!)) out.push(ev('response.output_text.delta', { item_id: item.id, output_index, content_index: 0, delta: p }));
      out.push(ev('response.output_text.done', { item_id: item.id, output_index, content_index: 0, text: r.text }));
    } else {
      out.push(ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', arguments: '' } }));
      for (const p of pieces(String(item.arguments))) out.push(ev('response.function_call_arguments.delta', { item_id: item.id, output_index, delta: p }));
      out.push(ev('response.function_call_arguments.done', { item_id: item.id, output_index, arguments: item.arguments }));
    }
    out.push(ev('response.output_item.done', { output_index, item }));
  });
  out.push(ev('response.completed', { response: { ...responsesBody(model, r), sequence_number: undefined } }));
  return out;
}
