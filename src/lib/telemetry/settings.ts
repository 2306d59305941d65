import { ConfigError } from '../config/config.js';

type Env = Record<string, string | undefined>;

export type OtlpProtocol = 'http/json' | 'http/protobuf';

/** How this process traces, read from the standard OTEL_* variables only; null = tracing off. */
export interface TracingSettings {
  exporter: 'otlp' | 'console';
  protocol: OtlpProtocol;
  sampler: { name: string; ratio: number };
  batch: { scheduledDelayMillis?: number; maxExportBatchSize?: number; maxQueueSize?: number; exportTimeoutMillis?: number };
  /** TROUPE_OTEL_CAPTURE_CONTENT=true: model-call spans carry the prompt and the answer (off by default). */
  captureContent: boolean;
}

const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'];

function positive(env: Env, name: string): number | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new ConfigError(`${name} must be a positive number, got ${JSON.stringify(raw)}`);
  return n;
}

/**
 * Tracing is on only when an exporter is configured: an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or an explicit OTEL_TRACES_EXPORTER. The spec's default exporter (otlp to
 * localhost) is not assumed: a process nobody asked to trace must not load the SDK nor send to a port nobody
 * listens on. OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true turn it off whatever else is set.
 */
export function tracingSettings(env: Env): TracingSettings | null {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return null;
  const named = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() ?? '';
  if (named === 'none') return null;
  const endpoint = (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '').trim();
  if (!named && !endpoint) return null;
  const exporters = named ? named.split(',').map((s) => s.trim()).filter(Boolean) : ['otlp'];
  const exporter = exporters.find((e) => e === 'otlp' || e === 'console');
  if (!exporter || exporters.some((e) => e !== 'otlp' && e !== 'console' && e !== 'none')) {
    throw new ConfigError(`OTEL_TRACES_EXPORTER=${named} is not supported: use otlp, console or none`);
  }
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf').trim();
  if (protocol !== 'http/json' && protocol !== 'http/protobuf') {
    throw new ConfigError(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported: use http/protobuf or http/json`);
  }
  const samplerName = (env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on').trim().toLowerCase();
  if (!SAMPLERS.includes(samplerName)) throw new ConfigError(`OTEL_TRACES_SAMPLER=${samplerName} is not supported: use one of ${SAMPLERS.join(', ')}`);
  const argRaw = env.OTEL_TRACES_SAMPLER_ARG?.trim();
  const ratio = argRaw ? Number(argRaw) : 1;
  if (samplerName.endsWith('traceidratio') && (!Number.isFinite(ratio) || ratio < 0 || ratio > 1)) {
    throw new ConfigError(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, got ${JSON.stringify(argRaw)}`);
  }
  return {
    exporter: exporter as 'otlp' | 'console',
    protocol,
    sampler: { name: samplerName, ratio },
    batch: {
      scheduledDelayMillis: positive(env, 'OTEL_BSP_SCHEDULE_DELAY'),
      maxExportBatchSize: positive(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE'),
      maxQueueSize: positive(env, 'OTEL_BSP_MAX_QUEUE_SIZE'),
      exportTimeoutMillis: positive(env, 'OTEL_BSP_EXPORT_TIMEOUT'),
    },
    captureContent: env.TROUPE_OTEL_CAPTURE_CONTENT?.trim().toLowerCase() === 'true',
  };
}
