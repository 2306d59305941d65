import { context, propagation, trace, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace';
import type { TracingSettings } from './settings.js';

/**
 * The OpenTelemetry SDK, set up from TracingSettings. The only file that loads the SDK, and it is required only
 * when tracing is on (tracing.ts), so a process that does not trace never loads it.
 */

function samplerOf(s: TracingSettings['sampler']): Sampler {
  const ratio = new TraceIdRatioBasedSampler(s.ratio);
  switch (s.name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio;
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

function exporterOf(settings: TracingSettings): SpanExporter {
  if (settings.exporter === 'console') return new ConsoleSpanExporter();
  // Each exporter reads its endpoint, headers, timeout and compression from the OTEL_EXPORTER_OTLP_* variables.
  if (settings.protocol === 'http/json') {
    const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
    return new OTLPTraceExporter();
  }
  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-proto') as typeof import('@opentelemetry/exporter-trace-otlp-proto');
  return new OTLPTraceExporter();
}

export interface Sdk {
  tracer: Tracer;
  api: typeof import('@opentelemetry/api');
  /** Sends what is still buffered, then stops. */
  shutdown(): Promise<void>;
}

export function startSdk(settings: TracingSettings, roles: string): Sdk {
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) win over these defaults.
  const resource = resourceFromAttributes({ 'service.name': 'troupe', 'troupe.roles': roles }).merge(detectResources({ detectors: [envDetector] }));
  const batch = Object.fromEntries(Object.entries(settings.batch).filter(([, v]) => v !== undefined));
  const provider = new TracerProvider({ resource, sampler: samplerOf(settings.sampler), spanProcessors: [new BatchSpanProcessor({ exporter: exporterOf(settings), ...batch })] });
  const contextManager = new AsyncLocalStorageContextManager();
  context.setGlobalContextManager(contextManager.enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return {
    tracer: provider.getTracer('troupe'),
    api: require('@opentelemetry/api') as typeof import('@opentelemetry/api'),
    shutdown: async () => {
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}
