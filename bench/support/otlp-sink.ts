import { createServer } from 'node:http';

/**
 * Where traced bench processes export: an OTLP/HTTP endpoint that takes every POST, answers 200 with an empty
 * body (a valid response in both encodings) and counts what arrived, so a bench can say the spans were sent.
 */
export interface OtlpSink {
  url: string;
  requests(): number;
  bytes(): number;
  close(): Promise<void>;
}

export async function startOtlpSink(): Promise<OtlpSink> {
  let requests = 0;
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on('data', (d: Buffer) => (bytes += d.length));
    req.on('end', () => {
      requests++;
      res.writeHead(200, { 'content-type': String(req.headers['content-type'] ?? 'application/x-protobuf') }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    url,
    requests: () => requests,
    bytes: () => bytes,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

/** A bench's tracing modes: `off`, or the percentage of traces sampled (`100`, `10`), exported to `sink`. */
export function tracingEnv(mode: string, sinkUrl: string): Record<string, string> {
  if (mode === 'off') return { OTEL_TRACES_EXPORTER: 'none' };
  const ratio = Number(mode) / 100;
  if (!Number.isFinite(ratio) || ratio <= 0 || ratio > 1) throw new Error(`tracing mode ${mode}: use off or a percentage (100, 10)`);
  return { OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: String(ratio) };
}
