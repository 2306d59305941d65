import { Agent, request, type Dispatcher } from 'undici';
import { UpstreamError, isRetryableStatus, parseRetryAfter } from './errors.js';
import { FORMATS } from './formats/index.js';
import { parseSse } from './sse.js';
import type { LlmRequest, LlmResponse, Provider, StreamEvent, Target } from './types.js';

export const DEFAULT_BASE_URL: Record<Provider, string> = {
  openai: 'https://api.openai.com/v1',
  'openai-responses': 'https://api.openai.com/v1',
  anthropic: 'https://api.anthropic.com',
};

const PATH: Record<Provider, string> = { openai: '/chat/completions', 'openai-responses': '/responses', anthropic: '/v1/messages' };

function headersFor(target: Target): Record<string, string> {
  const h: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  if (target.provider === 'anthropic') {
    h['x-api-key'] = target.apiKey;
    h['anthropic-version'] = '2023-06-01';
  } else h.authorization = `Bearer ${target.apiKey}`;
  return h;
}

/**
 * Calls upstream models in their native format over one keep-alive pool per
 * origin (an undici Agent). Shared by the router and agent turns.
 */
export class LlmClient {
  private readonly agent: Agent;
  private closing: Promise<void> | null = null;
  readonly name = 'llm-client';

  constructor(opts: { connections?: number } = {}) {
    this.agent = new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 300_000, connections: opts.connections ?? 256, headersTimeout: 120_000, bodyTimeout: 300_000 });
  }

  private async send(req: LlmRequest, target: Target, signal?: AbortSignal): Promise<Dispatcher.ResponseData> {
    const body = JSON.stringify(FORMATS[target.provider].serializeRequest(req, target));
    const url = target.baseUrl.replace(/\/+$/, '') + PATH[target.provider];
    let res: Dispatcher.ResponseData;
    try {
      res = await request(url, { method: 'POST', headers: headersFor(target), body, dispatcher: this.agent, signal });
    } catch (e) {
      if (signal?.aborted) throw e;
      throw new UpstreamError(`could not reach ${target.provider} upstream: ${(e as Error).message}`, true);
    }
    if (res.statusCode >= 400) {
      const text = await res.body.text().catch(() => '');
      let parsed: unknown = undefined;
      try {
        parsed = JSON.parse(text);
      } catch {
        /* not JSON */
      }
      throw new UpstreamError(`${target.provider} upstream answered ${res.statusCode}: ${text.slice(0, 300)}`, isRetryableStatus(res.statusCode), res.statusCode, parsed, parseRetryAfter(res.headers['retry-after']));
    }
    return res;
  }

  /** One non-streaming call. */
  async complete(req: LlmRequest, target: Target, signal?: AbortSignal): Promise<LlmResponse> {
    const res = await this.send({ ...req, stream: false }, target, signal);
    let json: Record<string, unknown>;
    try {
      json = (await res.body.json()) as Record<string, unknown>;
    } catch (e) {
      throw new UpstreamError(`${target.provider} upstream sent an unreadable body: ${(e as Error).message}`, true);
    }
    return FORMATS[target.provider].parseResponse(json);
  }

  /** A streaming call, as canonical events in arrival order; leaving the loop early closes the upstream. */
  async *stream(req: LlmRequest, target: Target, signal?: AbortSignal): AsyncGenerator<StreamEvent> {
    const res = await this.send({ ...req, stream: true }, target, signal);
    const decoder = FORMATS[target.provider].decoder();
    try {
      for await (const msg of parseSse(res.body)) yield* decoder.push(msg);
      yield* decoder.end();
    } catch (e) {
      if (e instanceof UpstreamError || signal?.aborted) throw e;
      throw new UpstreamError(`${target.provider} upstream stream broke: ${(e as Error).message}`, true);
    } finally {
      if (!res.body.destroyed) res.body.destroy();
    }
  }

  close(): Promise<void> {
    return (this.closing ??= this.agent.close());
  }
}
