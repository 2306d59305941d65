import { Agent, request } from 'undici';
import { ensureError } from '../../src/domain/errors.js';
import { guardedLookup } from '../../src/lib/net/guarded-lookup.js';
import { parseRetryAfter } from '../../src/lib/net/retry-after.js';
import type { Resolver } from '../../src/lib/net/resolver.js';
import { validateWebhookUrl } from '../../src/lib/net/url-guard.js';
import { WEBHOOK_HEADERS, signatureHeader } from '../../src/lib/webhooks/signature.js';
import { inSpan, tracingOn } from '../../src/lib/telemetry/tracing.js';

export const USER_AGENT = 'Service-Webhook/1.0';

export interface SenderOptions {
  /** TROUPE_WEBHOOKS_ALLOW_PRIVATE: lifts the HTTPS and public-address rules (local runs only). */
  allowPrivate: boolean;
  timeoutMs: number;
  /** Name resolution at check and at connect; tests inject one they control. */
  resolver?: Resolver;
}

export interface SendRequest {
  url: string;
  /** The webhook id: the body's `id`, the same on every attempt. */
  eventId: string;
  /** The body exactly as first serialised; never re-serialised, so every attempt sends the same bytes. */
  body: string;
  /** Current secret first; the previous one too during the hour after a rotation. */
  secrets: readonly string[];
}

/** One attempt's result, as recorded in the delivery log. */
export interface AttemptOutcome {
  ok: boolean;
  status_code: number | null;
  error: string | null;
  /** Milliseconds the receiver asked us to wait (Retry-After). */
  retry_after_ms: number | null;
  /** 410 Gone: the receiver asks us to stop; the webhook is disabled. */
  gone: boolean;
  /** The SSRF guard refused the target; no connection was made to it. */
  refused: boolean;
  duration_ms: number;
}

function failure(error: string, started: number, refused = false): AttemptOutcome {
  return { ok: false, status_code: null, error, retry_after_ms: null, gone: false, refused, duration_ms: Date.now() - started };
}

function statusOutcome(status: number, retryAfter: string | string[] | undefined, started: number): AttemptOutcome {
  const ok = status >= 200 && status < 300;
  // Redirects are not followed: a 3xx could point anywhere, including inside our network.
  const error = ok ? null : status >= 300 && status < 400 ? `redirect (${status}) not followed` : `HTTP ${status}`;
  return { ok, status_code: status, error, retry_after_ms: ok ? null : parseRetryAfter(retryAfter), gone: status === 410, refused: false, duration_ms: Date.now() - started };
}

/**
 * Sends signed webhook requests through one keep-alive pool whose every new
 * connection goes through the SSRF guard. The URL rules are checked before
 * each attempt too, because sockets skip `lookup` for IP-literal hosts.
 */
export class WebhookSender {
  private readonly agent: Agent;
  private closing: Promise<void> | null = null;

  constructor(private readonly opts: SenderOptions) {
    this.agent = new Agent({
      connect: { lookup: guardedLookup({ allowPrivate: opts.allowPrivate, resolver: opts.resolver }), timeout: opts.timeoutMs },
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
      keepAliveTimeout: 10_000,
    });
  }

  /**
   * One delivery attempt. Traced as a `webhook POST` client span naming only the receiver's host: the URL's path
   * and query may hold the tenant's own tokens, and the headers hold the signature.
   */
  send(req: SendRequest, now = Date.now()): Promise<AttemptOutcome> {
    if (!tracingOn()) return this.attempt(req, now);
    let host: string | undefined;
    try {
      host = new URL(req.url).hostname;
    } catch {
      host = undefined;
    }
    return inSpan('webhook POST', 'client', { 'http.request.method': 'POST', 'server.address': host, 'troupe.webhook.id': req.eventId }, async (span) => {
      const out = await this.attempt(req, now);
      span.setAll({ 'http.response.status_code': out.status_code ?? undefined, 'troupe.webhook.refused': out.refused || undefined });
      if (!out.ok) span.fail(out.error ?? 'failed', out.status_code ? String(out.status_code) : 'network');
      return out;
    });
  }

  private async attempt(req: SendRequest, now: number): Promise<AttemptOutcome> {
    const started = Date.now();
    try {
      await validateWebhookUrl(req.url, { allowPrivate: this.opts.allowPrivate, resolver: this.opts.resolver });
    } catch (err) {
      return failure(`refused: ${ensureError(err).message}`, started, true);
    }
    const timestamp = String(Math.floor(now / 1000));
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new Error(`timed out after ${this.opts.timeoutMs} ms`)), this.opts.timeoutMs);
    try {
      const res = await request(req.url, {
        method: 'POST',
        dispatcher: this.agent,
        signal: abort.signal,
        headers: {
          'user-agent': USER_AGENT,
          'content-type': 'application/json',
          [WEBHOOK_HEADERS.id]: req.eventId,
          [WEBHOOK_HEADERS.timestamp]: timestamp,
          [WEBHOOK_HEADERS.signature]: signatureHeader(req.secrets, timestamp, req.body),
        },
        body: req.body,
      });
      // The answer's body is not used; read a little so the connection can be reused, then drop it.
      await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
      return statusOutcome(res.statusCode, res.headers['retry-after'], started);
    } catch (err) {
      return failure(describe(err, abort.signal), started, (err as NodeJS.ErrnoException).code === 'ERR_ADDRESS_REFUSED' || causeCode(err) === 'ERR_ADDRESS_REFUSED');
    } finally {
      clearTimeout(timer);
    }
  }

  close(): Promise<void> {
    if (!this.closing) this.closing = this.agent.close().catch(() => this.agent.destroy());
    return this.closing;
  }
}

function causeCode(err: unknown): string | undefined {
  return ((err as { cause?: { code?: string } }).cause ?? {}).code;
}

/** A short reason for the delivery log; never includes headers (the signature) or the body. */
function describe(err: unknown, signal: AbortSignal): string {
  if (signal.aborted) return ensureError(signal.reason).message;
  const e = ensureError(err) as NodeJS.ErrnoException & { cause?: Error & { code?: string } };
  const code = e.code ?? e.cause?.code;
  const msg = e.cause && e.message === 'fetch failed' ? e.cause.message : e.message;
  const text = code && !msg.includes(code) ? `${code}: ${msg}` : msg;
  return text.length > 300 ? text.slice(0, 300) : text;
}
