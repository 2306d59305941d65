/**
 * A floor for a leaner HTTP layer in Node: what a proxy adds when it reads
 * HTTP/1.1 itself off a `net` socket instead of through node:http. It parses
 * the request head and its Content-Length body by hand (no validation beyond
 * what the bench's own requests need), forwards the same bytes the bare Node
 * proxy does (floor-proxy.ts), and answers a whole answer in one write, a
 * stream as chunks relayed as they come.
 *  - default: the upstream call goes through undici's dispatch, as the router's does (src/lib/llm/upstream-post.ts)
 *  - `--net`: the upstream call is written on a kept-alive `net` socket too, and the answer's bytes (its
 *    Content-Length body, or its chunked body as it is, framing included) are relayed after a head of our own
 * Not a server to deploy: no limits, no timeouts, no error handling beyond a 502.
 * Usage: node lean-proxy.js <upstream origin> [--net] (prints its own origin)
 */
import { connect, createServer, type Socket } from 'node:net';
import { Agent, type Dispatcher } from 'undici';

const upstream = process.argv[2];
const NET_UPSTREAM = process.argv.includes('--net');
const agent = new Agent({ keepAliveTimeout: 60_000, connections: 256 });
const CRLF2 = Buffer.from('\r\n\r\n');

interface Call {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** The same rewrite as floor-proxy.ts: the bench's router paths onto the fake's, and a body the Messages API takes. */
function rewrite(url: string, raw: Buffer): Call {
  const anthropic = url.startsWith('/anth/');
  if (!anthropic) return { path: '/v1/chat/completions', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' }, body: raw.toString('utf8') };
  const b = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
  const headers = { 'content-type': 'application/json', 'x-api-key': 'sk-bench', 'anthropic-version': '2023-06-01' };
  return { path: '/v1/messages', headers, body: JSON.stringify({ ...b, model: 'm', max_tokens: 256 }) };
}

/** Reads requests off one client connection, one at a time (pipelined ones wait their turn). */
function serveConnection(client: Socket): void {
  let buf: Buffer = Buffer.alloc(0);
  let busy = false;
  const next = () => {
    if (busy) return;
    const end = buf.indexOf(CRLF2);
    if (end === -1) return;
    const head = buf.toString('latin1', 0, end);
    const cl = /\r\ncontent-length:[ \t]*(\d+)/i.exec(head);
    const length = cl ? Number(cl[1]) : 0;
    if (buf.length < end + 4 + length) return;
    const url = head.slice(head.indexOf(' ') + 1, head.indexOf(' ', head.indexOf(' ') + 1));
    const body = buf.subarray(end + 4, end + 4 + length);
    buf = buf.subarray(end + 4 + length);
    busy = true;
    const done = () => {
      busy = false;
      next();
    };
    const call = rewrite(url, body);
    if (NET_UPSTREAM) viaNet(call, client, done);
    else viaUndici(call, client, done);
  };
  client.on('data', (chunk: Buffer) => {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    next();
  });
  client.on('error', () => client.destroy());
}

const statusLine = (status: number) => `HTTP/1.1 ${status} ${status === 200 ? 'OK' : 'Error'}\r\n`;

function wholeAnswer(client: Socket, status: number, type: string, body: Buffer): void {
  client.write(Buffer.concat([Buffer.from(`${statusLine(status)}content-type: ${type}\r\ncontent-length: ${body.length}\r\nconnection: keep-alive\r\n\r\n`, 'latin1'), body]));
}

const streamHead = (status: number, type: string) => `${statusLine(status)}content-type: ${type}\r\ntransfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n`;

function viaUndici(call: Call, client: Socket, done: () => void): void {
  let status = 0;
  let type = '';
  let streaming = false;
  const chunks: Buffer[] = [];
  const handler: Dispatcher.DispatchHandler = {
    onRequestStart() {},
    onResponseStart(_c, s, headers) {
      status = s;
      type = String(headers['content-type'] ?? 'application/json');
      streaming = type.startsWith('text/event-stream');
      if (streaming) client.write(streamHead(status, type));
    },
    onResponseData(_c, chunk) {
      if (streaming) client.write(`${chunk.length.toString(16)}\r\n${chunk.toString('latin1')}\r\n`, 'latin1');
      else chunks.push(chunk);
    },
    onResponseEnd() {
      if (streaming) client.write('0\r\n\r\n');
      else wholeAnswer(client, status, type, Buffer.concat(chunks));
      done();
    },
    onResponseError(_c, err) {
      if (!streaming) wholeAnswer(client, 502, 'text/plain', Buffer.from(err.message));
      else client.destroy();
      done();
    },
  };
  agent.dispatch({ origin: upstream, path: call.path, method: 'POST', headers: call.headers, body: call.body }, handler);
}

const target = new URL(upstream);
const idle: Socket[] = [];

/** A new upstream connection, dropped from the idle list when the upstream closes it (its keep-alive timeout). */
function openUpstream(): Socket {
  const s = connect({ host: target.hostname, port: Number(target.port), noDelay: true });
  s.once('close', () => {
    const i = idle.indexOf(s);
    if (i >= 0) idle.splice(i, 1);
  });
  return s;
}

/**
 * The upstream call on a raw kept-alive socket: the request in one write, the answer's head parsed for its status,
 * type and framing; a Content-Length body is answered whole, a chunked one relayed as it is, chunk framing included,
 * until its last chunk.
 */
function viaNet(call: Call, client: Socket, done: () => void): void {
  const up = idle.pop() ?? openUpstream();
  const body = Buffer.from(call.body);
  let head = `POST ${call.path} HTTP/1.1\r\nhost: ${target.host}\r\ncontent-length: ${body.length}\r\n`;
  for (const k in call.headers) head += `${k}: ${call.headers[k]}\r\n`;
  up.write(Buffer.concat([Buffer.from(head + '\r\n', 'latin1'), body]));
  let buf: Buffer = Buffer.alloc(0);
  let parsed: { status: number; type: string; length: number } | null = null;
  let ourHead = '';
  const chunked = new ChunkedEnd();
  const finish = () => {
    up.off('data', onData).off('error', onError);
    idle.push(up);
    done();
  };
  const onError = () => {
    if (!parsed) wholeAnswer(client, 502, 'text/plain', Buffer.from('upstream failed'));
    else client.destroy();
    done();
  };
  const onData = (chunk: Buffer) => {
    if (!parsed) {
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      const end = buf.indexOf(CRLF2);
      if (end === -1) return;
      const h = buf.toString('latin1', 0, end);
      const cl = /\r\ncontent-length:[ \t]*(\d+)/i.exec(h);
      const type = /\r\ncontent-type:[ \t]*([^\r]*)/i.exec(h)?.[1] ?? 'application/json';
      parsed = { status: Number(h.slice(9, 12)), type, length: cl ? Number(cl[1]) : -1 };
      chunk = buf.subarray(end + 4);
      buf = Buffer.alloc(0);
      if (parsed.length < 0) ourHead = streamHead(parsed.status, parsed.type);
    }
    if (parsed.length >= 0) {
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      if (buf.length < parsed.length) return;
      wholeAnswer(client, parsed.status, parsed.type, buf.subarray(0, parsed.length));
      return finish();
    }
    // The head goes out with the first bytes of the body: a whole answer in one read leaves in one write.
    client.write(ourHead ? Buffer.concat([Buffer.from(ourHead, 'latin1'), chunk]) : chunk);
    ourHead = '';
    if (chunked.feed(chunk)) finish();
  };
  up.on('data', onData).once('error', onError);
}

/** Follows a chunked body's framing only to tell where it ends (the zero-size chunk; trailers not handled). */
class ChunkedEnd {
  private line = '';
  private left = 0; // data bytes plus their CRLF still to skip

  feed(b: Buffer): boolean {
    let i = 0;
    while (i < b.length) {
      if (this.left > 0) {
        const n = Math.min(this.left, b.length - i);
        this.left -= n;
        i += n;
        continue;
      }
      const nl = b.indexOf(10, i);
      if (nl === -1) {
        this.line += b.toString('latin1', i);
        return false;
      }
      const size = parseInt(this.line + b.toString('latin1', i, nl), 16);
      this.line = '';
      i = nl + 1;
      if (size === 0) return true; // the final CRLF follows in this read on every answer the fake writes
      this.left = size + 2;
    }
    return false;
  }
}

const server = createServer({ noDelay: true }, serveConnection);
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`http://127.0.0.1:${(server.address() as { port: number }).port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
