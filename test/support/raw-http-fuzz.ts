import { connect } from 'node:net';

/** A small seeded PRNG (mulberry32): the same seed draws the same requests on every run. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'TRACE', 'PROPFIND', 'get', 'Post', 'X'.repeat(200), 'GE T', 'P\x00ST', 'BREW'];
/** Path segments that break decoders: bad escapes, encoded separators and NULs, overlong UTF-8, raw non-ASCII, dots, huge. */
const SEGMENTS = ['%ZZ', '%', '%%', '%E0%A4%A', '%C0%AF', '%00', '%2F', '%2e%2e', '..', '.', '', '%FF%FE', 'é', '\u{1F600}', '*', ';x=1', 'a b', '%u0041', '\\', 'x'.repeat(3000), '%25ZZ', '{router_id}', '__proto__', 'constructor', 'null', '-1', '9'.repeat(40)];
const QUERIES = ['', '?', '?a=%ZZ', '?limit=-1', '?limit=1e999', '?cursor=%E0%A4%A', '?a&a&a', '?after=' + 'z'.repeat(2000), '?%=%', '?format=xml', '?last_event_id=%00'];
const VERSIONS = ['HTTP/1.1', 'HTTP/1.1', 'HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/9.9', 'HTTP/1.1x', 'FOO'];
const BODIES = ['{}', '{', '[]', 'null', '"x"', '{"model":"service/routing","messages":[{"role":"user","content":"hi"}],"max_tokens":5}', '{"a":' + '['.repeat(5000), '\x00\x01\x02', 'é'.repeat(50), '{"type":"user.message","content":[{"type":"text","text":"%ZZ"}]}', '{"__proto__":{"x":1}}'];
const CONTENT_TYPES = ['application/json', 'text/plain', 'multipart/form-data', 'multipart/form-data; boundary=x', 'application/json; charset=utf-16', 'application/x-www-form-urlencoded', '', '\x7f'];

export interface FuzzKeys {
  valid: string;
}

/** One raw request: a path from the ingress's templates with fuzzed parameters, and bytes that stretch HTTP/1.1. */
export function drawRequest(r: () => number, templates: readonly string[], keys: FuzzKeys): Buffer {
  const method = r() < 0.7 ? pick(r, ['GET', 'POST', 'PUT', 'DELETE']) : pick(r, METHODS);
  let path = pick(r, templates).replace(/\{[a-z_]+\}/g, () => (r() < 0.3 ? 'x' : pick(r, SEGMENTS)));
  if (r() < 0.1) path = pick(r, ['*', 'http://evil.example/v1/agents', '//', '/..%2f..%2f', '', '/%ZZ/messages', '/' + pick(r, SEGMENTS)]);
  const target = path + (r() < 0.3 ? pick(r, QUERIES) : '');
  const lines = [`${method} ${target} ${pick(r, VERSIONS)}`];
  if (r() < 0.95) lines.push('Host: 127.0.0.1');
  const auth = r();
  if (auth < 0.4) lines.push(`Authorization: Bearer ${keys.valid}`);
  else if (auth < 0.5) lines.push(`Authorization: Bearer ${'k'.repeat(Math.floor(r() * 6000))}`);
  else if (auth < 0.55) lines.push(pick(r, ['Authorization: Bearer', 'Authorization: Basic Zm9vOmJhcg==', 'Authorization: Bearer a b', 'x-api-key: ' + keys.valid, 'x-api-key: %ZZ']));
  let body = r() < 0.5 ? pick(r, BODIES) : '';
  const framing = r();
  if (framing < 0.55) {
    if (body) lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  } else if (framing < 0.65) lines.push(`Content-Length: ${pick(r, ['-1', 'abc', '99999999999999999999', '1, 2', '0x10', ' 5'])}`);
  else if (framing < 0.7) lines.push(`Content-Length: ${Buffer.byteLength(body) + 100}`); // truncated body
  else if (framing < 0.75) lines.push('Content-Length: 2', 'Content-Length: 3');
  else if (framing < 0.85) {
    lines.push(pick(r, ['Transfer-Encoding: chunked', 'Transfer-Encoding: gzip, chunked', 'Transfer-Encoding: chunked, identity', 'Transfer-Encoding: xchunked']));
    if (r() < 0.3) lines.push('Content-Length: 5');
    body = pick(r, [`${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`, 'zz\r\nabc\r\n0\r\n\r\n', '5\r\nab', `3;${'e'.repeat(20000)}\r\nabc\r\n0\r\n\r\n`, 'ffffffffffffffff\r\n']);
  }
  if (r() < 0.3) lines.push(`Content-Type: ${pick(r, CONTENT_TYPES)}`);
  const extra = r();
  if (extra < 0.05) lines.push(`X-Big: ${'h'.repeat(20_000)}`);
  else if (extra < 0.08) for (let i = 0; i < 300; i++) lines.push(`X-Many-${i}: v`);
  else if (extra < 0.12) lines.push(pick(r, ['NoColonHere', 'Bad Header: x', 'X-Nul: a\x00b', ': empty-name', 'X-Obs: a\r\n folded']));
  else if (extra < 0.2) lines.push(pick(r, ['Content-Encoding: gzip', 'Content-Encoding: br, gzip', 'Expect: 100-continue', 'Expect: nonsense', 'Connection: Upgrade', 'Upgrade: websocket', 'X-Forwarded-For: %ZZ, ::1, not-an-ip', 'X-Request-Id: ../../etc', 'Idempotency-Key: ' + 'i'.repeat(5000), 'Last-Event-ID: %ZZ', 'Range: bytes=9-1', 'If-None-Match: *']));
  lines.push('Connection: close');
  return Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1'), Buffer.from(body)]);
}

/** Sends one raw request and reads the status of the answer: null when the server closed without one or took longer than `ms`. */
export function sendRaw(port: number, bytes: Buffer, ms: number): Promise<number | null> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let head = '';
    let done = false;
    const finish = (status: number | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(status);
    };
    const timer = setTimeout(() => finish(statusOf(head)), ms);
    socket.on('error', () => finish(statusOf(head)));
    socket.on('close', () => finish(statusOf(head)));
    socket.on('data', (d: Buffer) => {
      // A 100 Continue comes before the final answer; read on past it.
      head += d.toString('latin1');
      const s = statusOf(head);
      if (s !== null) finish(s);
    });
    socket.write(bytes, () => undefined);
  });
}

/** The final status line's code, once it has arrived. */
function statusOf(text: string): number | null {
  for (const m of text.matchAll(/HTTP\/1\.[01] (\d{3})[^\r\n]*\r\n/g)) if (m[1] !== '100') return Number(m[1]);
  return null;
}
