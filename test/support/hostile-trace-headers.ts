import { randomBytes } from 'node:crypto';
import { request } from 'node:http';

/**
 * Incoming W3C trace-context headers a hostile or broken caller sends: each is answered as if it were absent (the
 * trace is not continued) or, for a valid `traceparent` with an oversized `tracestate`, continued with that state
 * cut to W3C's bounds (32 members, 512 characters). Sent by test/integration/tracing.test.ts with tracing on and
 * test/integration/hostile-input.test.ts with it off.
 */
export interface HostileTraceCase {
  what: string;
  /** Header values; an array is sent as that many header lines. */
  headers: Record<string, string | string[]>;
  /** The trace ids the headers name: a span in any of them was continued from the header. */
  traceIds: string[];
  /** Set when the traceparent is valid: the trace is continued from this span, with a bounded tracestate. */
  continues?: { traceId: string; spanId: string };
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/** Several KB, under Node's 16 KiB header limit (past it, any header is a 431 from the HTTP parser, not from tracing). */
const KB8 = 8 * 1024;

export function hostileTraceCases(): HostileTraceCase[] {
  const c = (what: string, make: (t: string, s: string) => string): HostileTraceCase => {
    const [t, s] = [hex(16), hex(8)];
    return { what, headers: { traceparent: make(t, s) }, traceIds: [t] };
  };
  const [t1, s1, t2, s2] = [hex(16), hex(8), hex(16), hex(8)];
  const [t3, s3, t4, s4] = [hex(16), hex(8), hex(16), hex(8)];
  const manyMembers = Array.from({ length: 1000 }, (_, i) => `k${i}=v${i}`).join(',');
  return [
    c('version ff', (t, s) => `ff-${t}-${s}-01`),
    c('all-zero trace id', (_t, s) => `00-${'0'.repeat(32)}-${s}-01`),
    c('all-zero span id', (t) => `00-${t}-${'0'.repeat(16)}-01`),
    c('trace id one short', (t, s) => `00-${t.slice(1)}-${s}-01`),
    c('trace id one long', (t, s) => `00-${t}a-${s}-01`),
    c('span id one short', (t, s) => `00-${t}-${s.slice(1)}-01`),
    c('span id one long', (t, s) => `00-${t}-${s}a-01`),
    c('flags of three digits', (t, s) => `00-${t}-${s}-001`),
    c('non-hex trace id', (t, s) => `00-${t.slice(0, 31)}g-${s}-01`),
    c('non-hex span id', (t, s) => `00-${t}-${s.slice(0, 15)}z-01`),
    c('upper-case hex', (t, s) => `00-${t.toUpperCase()}-${s.toUpperCase()}-01`),
    c('version 00 with a fifth field', (t, s) => `00-${t}-${s}-01-extra`),
    c('no dashes', (t, s) => `00${t}${s}01`),
    c('several KB after a valid prefix', (t, s) => `00-${t}-${s}-01-${'a'.repeat(KB8)}`),
    c('several KB of garbage', (t) => `${t}${'x-'.repeat(KB8 / 2)}`),
    c('empty', () => ''),
    { what: 'two traceparent headers', headers: { traceparent: [`00-${t1}-${s1}-01`, `00-${t2}-${s2}-01`] }, traceIds: [t1, t2] },
    { what: 'a huge tracestate with an invalid traceparent', headers: { traceparent: `ff-${t3}-${s3}-01`, tracestate: `big=${'v'.repeat(KB8)}` }, traceIds: [t3] },
    { what: 'a huge tracestate with a valid traceparent', headers: { traceparent: `00-${t4}-${s4}-01`, tracestate: `big=${'v'.repeat(KB8)},small=1` }, traceIds: [t4], continues: { traceId: t4, spanId: s4 } },
    ...(() => {
      const [t, s] = [hex(16), hex(8)];
      return [{ what: 'a tracestate of 1000 members', headers: { traceparent: `00-${t}-${s}-01`, tracestate: manyMembers }, traceIds: [t], continues: { traceId: t, spanId: s } }];
    })(),
    ...(() => {
      const [t, s] = [hex(16), hex(8)];
      return [{ what: 'two tracestate headers of 600 members each', headers: { traceparent: `00-${t}-${s}-01`, tracestate: [manyMembers.slice(0, 6000), manyMembers.slice(0, 6000)] }, traceIds: [t], continues: { traceId: t, spanId: s } }];
    })(),
  ];
}

/**
 * A request with these headers, by node:http (fetch joins a repeated header into one line; this sends one line per
 * value, as a proxy or a hostile client may). Resolves with the status, the X-Request-Id and the body.
 */
export function sendWithHeaders(url: string, headers: Record<string, string | string[]>, body?: unknown): Promise<{ status: number; requestId: string; body: string }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const all = payload === undefined ? headers : { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) };
    const req = request(url, { method: payload === undefined ? 'GET' : 'POST', headers: all }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, requestId: String(res.headers['x-request-id'] ?? ''), body: text }));
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('no answer in 10 s')));
    req.end(payload);
  });
}
