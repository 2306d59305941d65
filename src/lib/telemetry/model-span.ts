import type { Provider } from '../../domain/providers.js';
import type { Redactor } from '../../domain/redact.js';
import type { LlmRequest, LlmResponse, Usage } from '../llm/types.js';
import { captureContent, NO_SPAN, startSpan, tracingOn, type TraceSpan } from './tracing.js';

/** GenAI semantic conventions' provider names (`gen_ai.provider.name`); both OpenAI APIs are `openai`. */
const PROVIDER_NAME: Record<string, string> = { openai: 'openai', 'openai-responses': 'openai', anthropic: 'anthropic' };

/**
 * One upstream model call's span, `chat <model>`, with the GenAI semantic conventions' attributes. Made by the LLM
 * client, so a routed call shows one span per candidate tried. It never carries the key, the headers or the body;
 * the prompt and answer text only with TROUPE_OTEL_CAPTURE_CONTENT=true, scrubbed of the call's known secrets.
 */
export function modelSpan(req: LlmRequest, target: { provider: Provider; model: string; baseUrl: string }, streaming: boolean, scrub: Redactor): TraceSpan {
  if (!tracingOn()) return NO_SPAN;
  let host: string | undefined;
  try {
    host = new URL(target.baseUrl).hostname;
  } catch {
    host = undefined;
  }
  const span = startSpan(`chat ${target.model}`, 'client', {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': PROVIDER_NAME[target.provider] ?? target.provider,
    'gen_ai.request.model': target.model,
    'gen_ai.request.max_tokens': req.maxTokens,
    'gen_ai.request.temperature': req.temperature,
    'gen_ai.request.stream': streaming,
    'troupe.llm.api': target.provider,
    'server.address': host,
  });
  if (captureContent()) {
    if (req.system) span.set('gen_ai.system_instructions', scrub.redact(JSON.stringify([{ type: 'text', content: req.system }])));
    span.set('gen_ai.input.messages', scrub.redact(JSON.stringify(req.items)));
  }
  return span;
}

/** The call's end: its token counts (input counted as Troupe records and bills it), or why it failed. */
export function endModelSpan(span: TraceSpan, usage: Usage | null, input: number | null, failure?: string, res?: LlmResponse, scrub?: Redactor): void {
  if (span === NO_SPAN) return;
  if (usage) {
    span.setAll({
      'gen_ai.usage.input_tokens': input ?? usage.inputTokens,
      'gen_ai.usage.output_tokens': usage.outputTokens,
      'gen_ai.usage.cache_read.input_tokens': usage.cacheReadTokens,
      'gen_ai.usage.cache_creation.input_tokens': usage.cacheWriteTokens,
    });
  }
  if (res) {
    span.setAll({ 'gen_ai.response.model': res.model, 'gen_ai.response.id': res.id, 'gen_ai.response.finish_reasons': [res.stop] });
    if (captureContent() && scrub) span.set('gen_ai.output.messages', scrub.redact(JSON.stringify(res.blocks)));
  }
  if (failure) span.fail(failure, failure);
  span.end();
}
