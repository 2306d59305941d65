import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { ConfigError } from '../../src/lib/config/config.js';
import { tracingSettings } from '../../src/lib/telemetry/settings.js';

describe('tracing settings (OTEL_* variables)', () => {
  it('is off unless an exporter is configured, and off again with none or OTEL_SDK_DISABLED', () => {
    assert.equal(tracingSettings({}), null);
    assert.equal(tracingSettings({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' }), null);
    assert.equal(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }), null);
    assert.equal(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }), null);
    assert.equal(tracingSettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' })?.exporter, 'otlp');
    assert.equal(tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp' })?.exporter, 'otlp');
    assert.equal(tracingSettings({ OTEL_TRACES_EXPORTER: 'console' })?.exporter, 'console');
  });

  it('takes http/protobuf by default, http/json on request, the traces variable first, and refuses grpc clearly', () => {
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    assert.equal(tracingSettings(on)?.protocol, 'http/protobuf');
    assert.equal(tracingSettings({ ...on, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })?.protocol, 'http/json');
    assert.equal(tracingSettings({ ...on, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' })?.protocol, 'http/protobuf');
    assert.throws(() => tracingSettings({ ...on, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), (e: Error) => e instanceof ConfigError && /grpc is not supported/.test(e.message));
    assert.throws(() => tracingSettings({ OTEL_TRACES_EXPORTER: 'zipkin' }), ConfigError);
  });

  it('reads the sampler and its ratio, the batch delay and the content opt-in', () => {
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    assert.deepEqual(tracingSettings(on)?.sampler, { name: 'parentbased_always_on', ratio: 1 });
    assert.deepEqual(tracingSettings({ ...on, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' })?.sampler, { name: 'parentbased_traceidratio', ratio: 0.1 });
    assert.throws(() => tracingSettings({ ...on, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' }), ConfigError);
    assert.throws(() => tracingSettings({ ...on, OTEL_TRACES_SAMPLER: 'sometimes' }), ConfigError);
    assert.equal(tracingSettings({ ...on, OTEL_BSP_SCHEDULE_DELAY: '100' })?.batch.scheduledDelayMillis, 100);
    assert.equal(tracingSettings(on)?.captureContent, false);
    assert.equal(tracingSettings({ ...on, TROUPE_OTEL_CAPTURE_CONTENT: 'true' })?.captureContent, true);
  });

  it('off, the SDK is never loaded and the helpers do nothing; on, it is', () => {
    const dist = join(__dirname, '../../src/lib');
    // A fresh process: what a role that does not trace has loaded after starting tracing, logging and tracing a span.
    const probe = (env: Record<string, string>) =>
      JSON.parse(
        execFileSync(process.execPath, ['-e', `
          const t = require(${JSON.stringify(join(dist, 'telemetry/tracing.js'))});
          const stop = t.startTracing(${JSON.stringify(env)}, 'web');
          require(${JSON.stringify(join(dist, 'log/logger.js'))}).createLogger('silent');
          const span = t.startSpan('x', 'internal');
          const loaded = Object.keys(require.cache).filter((k) => /@opentelemetry[\\\\/](sdk-trace|exporter|context-async-hooks|resources|core)[\\\\/]/.test(k)).length;
          console.log(JSON.stringify({ on: t.tracingOn(), noop: span === t.NO_SPAN, carrier: t.carrierOf() ?? null, loaded }));
          if (stop) stop().then(() => process.exit(0));
        `], { encoding: 'utf8', timeout: 10_000 }),
      );
    assert.deepEqual(probe({}), { on: false, noop: true, carrier: null, loaded: 0 });
    const on = probe({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
    assert.equal(on.on, true);
    assert.equal(on.noop, false);
    assert.ok(on.loaded > 0);
  });
});
