import type { Context, Span } from '@opentelemetry/api';
import type { Sdk } from './sdk.js';
import { tracingSettings } from './settings.js';

/**
 * Troupe's one door to OpenTelemetry traces. Off (no exporter configured), every helper here is a no-op that loads
 * nothing: the SDK and even @opentelemetry/api are required only by startTracing when tracing is on, so the off
 * path costs a boolean test (bench/router, bench/ledger). Every span Troupe makes is made here or through these
 * helpers; the span names and attributes are listed in docs/operations.md (Tracing).
 */

type Attr = string | number | boolean | string[];
export type Attributes = Record<string, Attr | undefined>;

export type SpanKindName = 'internal' | 'server' | 'client' | 'producer' | 'consumer';
const KIND: Record<SpanKindName, number> = { internal: 0, server: 1, client: 2, producer: 3, consumer: 4 };
const STATUS_ERROR = 2;

/** The part of a span Troupe's code uses; a no-op when tracing is off or the span is not sampled. */
export interface TraceSpan {
  set(key: string, value: Attr | undefined): void;
  setAll(attrs: Attributes): void;
  rename(name: string): void;
  /** Marks the span failed with a short reason (never a stack, never a payload). */
  fail(reason: string, type?: string): void;
  end(): void;
}

export const NO_SPAN: TraceSpan = Object.freeze({ set() {}, setAll() {}, rename() {}, fail() {}, end() {} });

class LiveSpan implements TraceSpan {
  constructor(readonly span: Span) {}
  set(key: string, value: Attr | undefined): void {
    if (value !== undefined) this.span.setAttribute(key, value);
  }
  setAll(attrs: Attributes): void {
    for (const k in attrs) this.set(k, attrs[k]);
  }
  rename(name: string): void {
    this.span.updateName(name);
  }
  fail(reason: string, type?: string): void {
    this.span.setStatus({ code: STATUS_ERROR, message: reason.slice(0, 300) });
    if (type) this.span.setAttribute('error.type', type);
  }
  end(): void {
    this.span.end();
  }
}

let sdk: Sdk | null = null;
let content = false;

/** Whether spans are made in this process. */
export function tracingOn(): boolean {
  return sdk !== null;
}

/** TROUPE_OTEL_CAPTURE_CONTENT=true: model-call spans may carry prompt and answer text. */
export function captureContent(): boolean {
  return content;
}

/**
 * Starts tracing when the OTEL_* variables configure an exporter; returns the shutdown (which sends what is
 * buffered), or null when tracing stays off. Once per process, before anything logs or serves.
 */
export function startTracing(env: Record<string, string | undefined>, roles: string): (() => Promise<void>) | null {
  const settings = tracingSettings(env);
  if (!settings || sdk) return null;
  const { startSdk } = require('./sdk.js') as typeof import('./sdk.js');
  const started = startSdk(settings, roles);
  sdk = started;
  content = settings.captureContent;
  return async () => {
    if (sdk !== started) return;
    sdk = null;
    content = false;
    await started.shutdown();
  };
}

function attrsOf(attrs: Attributes | undefined): Record<string, Attr> | undefined {
  if (!attrs) return undefined;
  const out: Record<string, Attr> = {};
  for (const k in attrs) if (attrs[k] !== undefined) out[k] = attrs[k] as Attr;
  return out;
}

/** A span started under the active one (or under `parent`), not made active: the caller ends it. */
export function startSpan(name: string, kind: SpanKindName, attrs?: Attributes, parent?: Context): TraceSpan {
  if (!sdk) return NO_SPAN;
  return new LiveSpan(sdk.tracer.startSpan(name, { kind: KIND[kind], attributes: attrsOf(attrs) }, parent ?? sdk.api.context.active()));
}

/** Runs `fn` in a span that is active for everything it does (child spans, injected carriers, log lines), and ends it. */
export function inSpan<T>(name: string, kind: SpanKindName, attrs: Attributes | undefined, fn: (span: TraceSpan) => Promise<T>, parent?: Context): Promise<T> {
  if (!sdk) return fn(NO_SPAN);
  const { api } = sdk;
  const live = new LiveSpan(sdk.tracer.startSpan(name, { kind: KIND[kind], attributes: attrsOf(attrs) }, parent ?? api.context.active()));
  return api.context.with(api.trace.setSpan(parent ?? api.context.active(), live.span), async () => {
    try {
      return await fn(live);
    } catch (e) {
      live.fail(e instanceof Error ? e.message : String(e), e instanceof Error ? e.name : undefined);
      throw e;
    } finally {
      live.end();
    }
  });
}

/** The W3C context an incoming request carries (`traceparent`, `tracestate`), for a server span to continue. */
export function remoteContext(headers: Record<string, string | string[] | undefined>): Context | undefined {
  if (!sdk || !headers.traceparent) return undefined;
  const { api } = sdk;
  return api.propagation.extract(api.ROOT_CONTEXT, headers, {
    keys: (c) => Object.keys(c),
    get: (c, k) => c[k],
  });
}

/**
 * The active context as a string for a queued job (BullMQ's own `opts.telemetry.metadata` field, in the shape
 * bullmq-otel writes: the JSON of the propagator's carrier); undefined when off or nothing is active.
 */
export function carrierOf(span?: TraceSpan): string | undefined {
  if (!sdk) return undefined;
  const { api } = sdk;
  const ctx = span instanceof LiveSpan ? api.trace.setSpan(api.context.active(), span.span) : api.context.active();
  const carrier: Record<string, string> = {};
  api.propagation.inject(ctx, carrier);
  return carrier.traceparent ? JSON.stringify(carrier) : undefined;
}

/** The context a job's carrier names; undefined when off, absent or unreadable (the job then starts a trace). */
export function contextOf(metadata: string | undefined): Context | undefined {
  if (!sdk || !metadata) return undefined;
  let carrier: unknown;
  try {
    carrier = JSON.parse(metadata);
  } catch {
    return undefined;
  }
  if (typeof carrier !== 'object' || carrier === null) return undefined;
  const { api } = sdk;
  return api.propagation.extract(api.ROOT_CONTEXT, carrier as Record<string, unknown>, {
    keys: (c) => Object.keys(c),
    get: (c, k) => (typeof c[k] === 'string' ? (c[k] as string) : undefined),
  });
}

/** Runs `fn` with `ctx` active (a job's sender's context, for work done on its behalf outside its handler). */
export function withContext<T>(ctx: Context | undefined, fn: () => T): T {
  return sdk && ctx ? sdk.api.context.with(ctx, fn) : fn();
}

/** The active span's ids for a log line (pino's mixin, which merges the line into what it returns: a fresh object). */
export function logIds(): Record<string, string> {
  const span = sdk?.api.trace.getActiveSpan();
  if (!span) return {};
  const c = span.spanContext();
  return sdk!.api.isSpanContextValid(c) ? { trace_id: c.traceId, span_id: c.spanId } : {};
}
