import { createServer, type Server } from 'node:http';
import { gunzipSync } from 'node:zlib';

/** One span as an OTLP collector receives it, whatever the encoding. */
export interface CollectedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  /** The W3C tracestate the span carries ('' when none). */
  traceState: string;
  name: string;
  /** OTLP's enum: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, unknown>;
  /** The resource's service.name (and troupe.roles): which process sent it. */
  service: string;
  roles: string;
  /** Which encoding delivered it. */
  encoding: 'json' | 'protobuf';
  status: number;
}

export const KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

/**
 * An OpenTelemetry collector's OTLP/HTTP trace receiver (POST /v1/traces) on a random port, as the third party
 * Troupe exports to: it takes `application/json` and `application/x-protobuf` bodies, decodes them into spans and
 * keeps the raw bodies (a test searches them for what must never be sent). The protobuf side is decoded with a
 * small wire-format reader over the field numbers of opentelemetry-proto's trace.proto (the exporter package ships
 * encoders only).
 */
export class OtlpCollector {
  readonly spans: CollectedSpan[] = [];
  readonly bodies: Buffer[] = [];
  readonly contentTypes = new Set<string>();
  url = '';
  private server: Server | null = null;

  static async start(): Promise<OtlpCollector> {
    const c = new OtlpCollector();
    c.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (d: Buffer) => chunks.push(d));
      req.on('end', () => {
        let body = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
        const type = String(req.headers['content-type'] ?? '').split(';')[0].trim();
        if (req.method !== 'POST' || req.url !== '/v1/traces') {
          res.writeHead(404).end();
          return;
        }
        c.bodies.push(body);
        c.contentTypes.add(type);
        try {
          if (type === 'application/x-protobuf') {
            c.spans.push(...decodeProtobuf(body));
            res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
          } else {
            c.spans.push(...decodeJson(JSON.parse(body.toString('utf8'))));
            res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
          }
        } catch (e) {
          res.writeHead(400, { 'content-type': 'text/plain' }).end(String(e));
        }
      });
    });
    await new Promise<void>((resolve) => c.server!.listen(0, '127.0.0.1', resolve));
    c.url = `http://127.0.0.1:${(c.server.address() as { port: number }).port}`;
    return c;
  }

  /** Every span of one trace received so far. */
  trace(traceId: string): CollectedSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server?.closeAllConnections();
  }
}

type Json = Record<string, any>;

function jsonValue(v: Json | undefined): unknown {
  if (!v) return undefined;
  if ('stringValue' in v) return v.stringValue;
  if ('boolValue' in v) return v.boolValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue;
  if ('arrayValue' in v) return ((v.arrayValue.values ?? []) as Json[]).map(jsonValue);
  return undefined;
}

function jsonAttrs(list: Json[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, jsonValue(kv.value)]));
}

function decodeJson(body: Json): CollectedSpan[] {
  const out: CollectedSpan[] = [];
  for (const rs of (body.resourceSpans ?? []) as Json[]) {
    const resource = jsonAttrs(rs.resource?.attributes);
    for (const ss of (rs.scopeSpans ?? []) as Json[]) {
      for (const s of (ss.spans ?? []) as Json[]) {
        out.push({
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId ?? '',
          traceState: s.traceState ?? '',
          name: s.name,
          kind: s.kind,
          attributes: jsonAttrs(s.attributes),
          service: String(resource['service.name']),
          roles: String(resource['troupe.roles']),
          encoding: 'json',
          status: s.status?.code ?? 0,
        });
      }
    }
  }
  return out;
}

/** Protocol buffers' wire format: the fields of one message, by number (repeated fields keep every value). */
function fields(buf: Buffer): Map<number, (Buffer | bigint)[]> {
  const out = new Map<number, (Buffer | bigint)[]>();
  let i = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[i++];
      result |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return result;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const tag = Number(varint());
    const field = tag >>> 3;
    const wire = tag & 7;
    let value: Buffer | bigint;
    if (wire === 0) value = varint();
    else if (wire === 1) {
      value = buf.readBigUInt64LE(i);
      i += 8;
    } else if (wire === 2) {
      const len = Number(varint());
      value = buf.subarray(i, i + len);
      i += len;
    } else if (wire === 5) {
      value = BigInt(buf.readUInt32LE(i));
      i += 4;
    } else throw new Error(`unsupported wire type ${wire}`);
    out.set(field, [...(out.get(field) ?? []), value]);
  }
  return out;
}

const bytes = (m: Map<number, (Buffer | bigint)[]>, n: number): Buffer[] => (m.get(n) ?? []) as Buffer[];
const one = (m: Map<number, (Buffer | bigint)[]>, n: number): Buffer | bigint | undefined => m.get(n)?.[0];

/** AnyValue: 1 string, 2 bool, 3 int, 4 double, 5 array (ArrayValue.values = 1). */
function protoValue(buf: Buffer): unknown {
  const f = fields(buf);
  if (f.has(1)) return (one(f, 1) as Buffer).toString('utf8');
  if (f.has(2)) return one(f, 2) === 1n;
  if (f.has(3)) return Number(BigInt.asIntN(64, one(f, 3) as bigint));
  if (f.has(4)) {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(one(f, 4) as bigint);
    return b.readDoubleLE(0);
  }
  if (f.has(5)) return bytes(fields(one(f, 5) as Buffer), 1).map(protoValue);
  return undefined;
}

/** KeyValue: 1 key, 2 value. */
function protoAttrs(list: Buffer[]): Record<string, unknown> {
  return Object.fromEntries(list.map((kv) => {
    const f = fields(kv);
    return [(one(f, 1) as Buffer).toString('utf8'), f.has(2) ? protoValue(one(f, 2) as Buffer) : undefined];
  }));
}

/**
 * ExportTraceServiceRequest: 1 resource_spans. ResourceSpans: 1 resource (Resource: 1 attributes), 2 scope_spans.
 * ScopeSpans: 2 spans. Span: 1 trace_id, 2 span_id, 3 trace_state, 4 parent_span_id, 5 name, 6 kind, 9 attributes, 15 status
 * (Status: 3 code).
 */
function decodeProtobuf(body: Buffer): CollectedSpan[] {
  const out: CollectedSpan[] = [];
  for (const rs of bytes(fields(body), 1)) {
    const rsf = fields(rs);
    const resource = rsf.has(1) ? protoAttrs(bytes(fields(one(rsf, 1) as Buffer), 1)) : {};
    for (const ss of bytes(rsf, 2)) {
      for (const s of bytes(fields(ss), 2)) {
        const f = fields(s);
        const status = f.has(15) ? Number(one(fields(one(f, 15) as Buffer), 3) ?? 0n) : 0;
        out.push({
          traceId: ((one(f, 1) as Buffer | undefined) ?? Buffer.alloc(0)).toString('hex'),
          spanId: ((one(f, 2) as Buffer | undefined) ?? Buffer.alloc(0)).toString('hex'),
          parentSpanId: ((one(f, 4) as Buffer | undefined) ?? Buffer.alloc(0)).toString('hex'),
          traceState: ((one(f, 3) as Buffer | undefined) ?? Buffer.alloc(0)).toString('utf8'),
          name: ((one(f, 5) as Buffer | undefined) ?? Buffer.alloc(0)).toString('utf8'),
          kind: Number(one(f, 6) ?? 0n),
          attributes: protoAttrs(bytes(f, 9)),
          service: String(resource['service.name']),
          roles: String(resource['troupe.roles']),
          encoding: 'protobuf',
          status,
        });
      }
    }
  }
  return out;
}
