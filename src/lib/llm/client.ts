import type { IncomingHttpHeaders } from 'node:http';
import { Agent } from 'undici';
import { ensureError } from '../../domain/errors.js';
import { PROVIDERS, PROVIDER_SPECS, type Provider, type ProviderSpec } from '../../domain/providers.js';
import { ExpiringCache } from '../../domain/expiring-cache.js';
import { Redactor } from '../../domain/redact.js';
import { guardedLookup } from '../net/guarded-lookup.js';
import { checkModelEndpoint, type ModelEndpointGuard } from '../net/model-endpoint.js';
import { parseRetryAfter } from '../net/retry-after.js';
import { UPSTREAM_TOO_LARGE, UpstreamError, isRetryableStatus } from './errors.js';
import { FORMATS } from './formats/index.js';
import { EventStream } from './event-stream.js';
import { postStreaming, postWhole, type Cancel, type PostTarget, type StreamingAnswer, type WholeAnswer } from './upstream-post.js';
import { recordedInput, type LlmRequest, type LlmResponse, type StreamEvent, type Target, type Usage } from './types.js';
import { endModelSpan, modelSpan } from '../telemetry/model-span.js';

/**
 * Every call's headers, as the provider's description says: content type, the key in its auth header, the version
 * pins. Read from the description once per provider rather than on each call's path.
 */
const HEADERS = Object.fromEntries(
  PROVIDERS.map((p) => {
    const spec: ProviderSpec = PROVIDER_SPECS[p];
    const { header, scheme } = spec.auth;
    const prefix = scheme ? `${scheme} ` : '';
    const pins = Object.entries(spec.headers);
    const build = (apiKey: string): Record<string, string> => {
      const h: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      h[header] = prefix + apiKey;
      for (const [name, value] of pins) h[name] = value;
      return h;
    };
    return [p, build];
  }),
) as Record<Provider, (apiKey: string) => Record<string, string>>;

const headersFor = (target: Target): Record<string, string> => HEADERS[target.provider](target.apiKey);

/** A checked base_url as undici's dispatcher takes it: the origin, and the path the provider's path goes after. */
interface Endpoint {
  origin: string;
  base: string;
}

/** A non-streamed (or accumulated) answer's cap, and one SSE event's: far above any real model's, far below a process's memory. */
export const DEFAULT_MAX_ANSWER_BYTES = 32 * 1024 * 1024;
export const DEFAULT_MAX_EVENT_BYTES = 1024 * 1024;
/** How much of an error answer is read: it is only quoted (300 characters) and parsed for its JSON error. */
const ERROR_BODY_BYTES = 64 * 1024;

/** How long a passed endpoint check and a provider key's redactor are reused. */
const REUSE_MS = 5000;
const REUSE_MAX = 1000;

/** One finished upstream call, for metrics: no text, no keys. */
export interface ModelCallRecord {
  provider: Provider;
  model: string;
  mode: 'complete' | 'stream';
  seconds: number;
  usage: Usage | null;
  /** Why it failed: the upstream status, `network`, `stream`, `refused`, `aborted`, `too_large`; absent when it succeeded. */
  error?: string;
}

function failureKind(e: unknown, signal?: Cancel): string {
  if (signal?.aborted) return 'aborted';
  if (e instanceof UpstreamError && e.code === UPSTREAM_TOO_LARGE) return 'too_large';
  if (e instanceof UpstreamError) return e.status ? String(e.status) : /^refused/.test(e.message) ? 'refused' : /stream/.test(e.message) ? 'stream' : 'network';
  return 'other';
}

/**
 * Calls upstream models in their native format over one keep-alive pool per
 * origin (an undici Agent). Shared by the router and agent turns.
 *
 * It is where provider text enters Troupe, so two rules are kept here once:
 * every connection goes through the SSRF guard (the provider key must not be
 * sent into our own network), and every byte a provider sends back, answer or
 * error, has the call's known secrets scrubbed before anything parses, stores,
 * logs or returns it.
 */
export class LlmClient {
  private readonly agent: Agent;
  /** base_urls that passed the URL rules lately, parsed: the check resolves the host, which must not be on every call's path. */
  private readonly endpoints = new ExpiringCache<Endpoint>(REUSE_MS, REUSE_MAX);
  /** Redactors of plain provider keys: building one (escaped and encoded forms, sorted) per call showed in profiles. */
  private readonly redactors = new ExpiringCache<Redactor>(REUSE_MS, REUSE_MAX);
  private closing: Promise<void> | null = null;
  readonly name = 'llm-client';

  /** The caps on what an upstream sends back (TROUPE_UPSTREAM_MAX_ANSWER_BYTES, TROUPE_UPSTREAM_MAX_EVENT_BYTES). */
  private readonly maxAnswerBytes: number;
  private readonly maxEventBytes: number;

  constructor(private readonly guard: ModelEndpointGuard & { connections?: number; observe?: (r: ModelCallRecord) => void; maxAnswerBytes?: number; maxEventBytes?: number }) {
    this.maxAnswerBytes = guard.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES;
    this.maxEventBytes = guard.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
    this.agent = new Agent({
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 300_000,
      connections: guard.connections ?? 256,
      headersTimeout: 120_000,
      bodyTimeout: 300_000,
      connect: { lookup: guardedLookup({ allowPrivate: guard.allowPrivate, resolver: guard.resolver }) },
    });
  }

  /** Every secret the caller knows of for this call: the provider key, plus any the target lists. */
  private redactorFor(target: Target): Redactor {
    if (target.redact?.length) return new Redactor([target.apiKey, ...target.redact]);
    let r = this.redactors.get(target.apiKey);
    if (!r) this.redactors.set(target.apiKey, (r = new Redactor([target.apiKey])));
    return r;
  }

  /**
   * Where a target's calls go, once its base_url has passed the URL rules. Sockets skip `lookup` for IP-literal
   * hosts, so the rules are checked here too; resolving the host must not be on every call's path, so a pass
   * (and the parsed URL) is reused for a few seconds. The guarded lookup still checks every new connection's
   * addresses, so a name that turns inward meanwhile is refused there.
   */
  private async endpointOf(target: Target): Promise<Endpoint> {
    const hit = this.endpoints.get(target.baseUrl);
    if (hit) return hit;
    try {
      await checkModelEndpoint(target.baseUrl, 'base_url', this.guard);
    } catch (e) {
      throw new UpstreamError(`refused ${target.provider} upstream: ${ensureError(e).message}`, false);
    }
    const u = new URL(target.baseUrl);
    const endpoint = { origin: u.origin, base: u.pathname.replace(/\/+$/, '') };
    this.endpoints.set(target.baseUrl, endpoint);
    return endpoint;
  }

  private async postTarget(req: LlmRequest, target: Target): Promise<PostTarget> {
    const body = JSON.stringify(FORMATS[target.provider].serializeRequest(req, target));
    const { origin, base } = await this.endpointOf(target);
    return { origin, path: base + PROVIDER_SPECS[target.provider].path, headers: headersFor(target), body };
  }

  /** A failure to reach the upstream at all, as a retryable UpstreamError; a cancellation stays what it is. */
  private unreachable(e: unknown, target: Target, scrub: Redactor, signal: Cancel | undefined): unknown {
    if (signal?.aborted || e instanceof UpstreamError) return e;
    return new UpstreamError(scrub.redact(`could not reach ${target.provider} upstream: ${(e as Error).message}`), true);
  }

  /** An upstream's 4xx/5xx answer as the UpstreamError callers decide on (retry, fall back, pass on). */
  private refusal(status: number, headers: IncomingHttpHeaders, raw: string, target: Target, scrub: Redactor): UpstreamError {
    const text = scrub.redact(raw);
    let parsed: unknown = undefined;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return new UpstreamError(`${target.provider} upstream answered ${status}: ${text.slice(0, 300)}`, isRetryableStatus(status), status, parsed, parseRetryAfter(headers['retry-after']) ?? undefined);
  }

  private observe(target: Target, mode: ModelCallRecord['mode'], started: number, usage: Usage | null, error?: string): void {
    try {
      this.guard.observe?.({ provider: target.provider, model: target.model, mode, seconds: (performance.now() - started) / 1000, usage, ...(error ? { error } : {}) });
    } catch {
      // Metrics must never fail a model call.
    }
  }

  /** One non-streaming call. */
  async complete(req: LlmRequest, target: Target, signal?: Cancel): Promise<LlmResponse> {
    const started = performance.now();
    const span = modelSpan(req, target, false, this.redactorFor(target));
    try {
      const res = await this.completeOnce(req, target, signal);
      this.observe(target, 'complete', started, res.usage);
      endModelSpan(span, res.usage, recordedInput(res.usage, target.provider), undefined, res, this.redactorFor(target));
      return res;
    } catch (e) {
      const kind = failureKind(e, signal);
      this.observe(target, 'complete', started, null, kind);
      endModelSpan(span, null, null, kind);
      throw e;
    }
  }

  private async completeOnce(req: LlmRequest, target: Target, signal?: Cancel): Promise<LlmResponse> {
    const scrub = this.redactorFor(target);
    const post = await this.postTarget({ ...req, stream: false }, target);
    let res: WholeAnswer;
    try {
      res = await postWhole(this.agent, post, signal, this.maxAnswerBytes);
    } catch (e) {
      throw this.unreachable(e, target, scrub, signal);
    }
    if (res.statusCode >= 400) throw this.refusal(res.statusCode, res.headers, res.text, target, scrub);
    let json: Record<string, unknown>;
    try {
      json = JSON.parse(scrub.redact(res.text)) as Record<string, unknown>;
    } catch (e) {
      throw new UpstreamError(scrub.redact(`${target.provider} upstream sent an unreadable body: ${(e as Error).message}`), true);
    }
    return FORMATS[target.provider].parseResponse(json);
  }

  /**
   * A streaming call: resolves once the upstream has answered with a success status, with its events to read
   * (EventStream, read straight from undici's dispatch callbacks). Whoever opens one closes it, which stops the
   * upstream's answer if it is still arriving; an answer read to its end or its failure closes itself.
   * `keepsAll`: the reader keeps the whole answer (an agent turn accumulates it), so its total is capped too;
   * a relay (the router) holds only what its client has not read, and only each event is capped.
   */
  async openStream(req: LlmRequest, target: Target, signal?: Cancel, keepsAll = false): Promise<EventStream> {
    const started = performance.now();
    const scrub = this.redactorFor(target);
    const span = modelSpan(req, target, true, scrub);
    const closed = (usage: Usage | null, failure: unknown) => {
      const kind = failure === null ? undefined : failureKind(failure, signal);
      this.observe(target, 'stream', started, usage, kind);
      endModelSpan(span, usage, usage ? recordedInput(usage, target.provider) : null, kind);
    };
    try {
      const post = await this.postTarget({ ...req, stream: true }, target);
      let res: StreamingAnswer;
      try {
        res = await postStreaming(this.agent, post, signal);
      } catch (e) {
        throw this.unreachable(e, target, scrub, signal);
      }
      if (res.statusCode >= 400) {
        const text = await res.body.text(ERROR_BODY_BYTES).catch(() => '');
        throw this.refusal(res.statusCode, res.headers, text, target, scrub);
      }
      const limits = { eventBytes: this.maxEventBytes, answerBytes: keepsAll ? this.maxAnswerBytes : Number.MAX_SAFE_INTEGER };
      return new EventStream(target.provider, res.body, FORMATS[target.provider].decoder(), scrub, () => signal?.aborted === true, closed, limits);
    } catch (e) {
      closed(null, e);
      throw e;
    }
  }

  /** The same call as canonical events one by one, for callers that handle each (agent turns); leaving the loop early closes the upstream. */
  async *stream(req: LlmRequest, target: Target, signal?: Cancel): AsyncGenerator<StreamEvent> {
    const events = await this.openStream(req, target, signal, true);
    try {
      for (let batch = await events.read(); batch !== null; batch = await events.read()) yield* batch;
    } finally {
      events.close();
    }
  }

  close(): Promise<void> {
    return (this.closing ??= this.agent.close());
  }
}
