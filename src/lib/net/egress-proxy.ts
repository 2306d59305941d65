import { chmod, unlink } from 'node:fs/promises';
import http = require('node:http');
import net = require('node:net');
import { isIPv6 } from 'node:net';
import type { Duplex } from 'node:stream';
import type { LookupFunction } from './guarded-lookup.js';
import { EgressRefusal, vetEgress, type EgressGuardOptions, type EgressRefusalReason } from './egress-guard.js';
import type { ResolvedAddress } from './resolver.js';

export interface EgressProxyOptions extends EgressGuardOptions {
  /** Called once per refused connection (the refusals metric). */
  onRefusal?: (reason: EgressRefusalReason) => void;
  /** Tunnels and forwarded requests open at once; one more is refused. */
  maxConnections?: number;
  /** A tunnel or forwarded request that moves no byte either way for this long is closed. */
  idleTimeoutMs?: number;
  /** How long reaching the destination may take. */
  connectTimeoutMs?: number;
  /** Largest request head the proxy reads. */
  maxHeaderBytes?: number;
}

export interface EgressProxy {
  readonly socketPath: string;
  /** Stops listening, ends every open connection and removes the socket; idempotent. */
  close(): Promise<void>;
}

interface EgressLimits {
  maxConnections: number;
  idleTimeoutMs: number;
  connectTimeoutMs: number;
  maxHeaderBytes: number;
}

export const EGRESS_DEFAULTS: Readonly<EgressLimits> = Object.freeze({ maxConnections: 32, idleTimeoutMs: 60_000, connectTimeoutMs: 10_000, maxHeaderBytes: 16 * 1024 });

/** Request headers that describe the hop to the proxy, not the request (RFC 9110 §7.6.1), and are not passed on. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authorization', 'proxy-authenticate', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

/** `host:port` or `[v6]:port`, the authority form CONNECT carries. */
const AUTHORITY = /^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:/@[\]]+)):(\d{1,5})$/;

/**
 * [host, v6 host, name host, port] of a CONNECT target. An unbracketed IPv6
 * address (`::1:443`, which Python before 3.12 sends) is split at its last colon.
 */
function authority(target: string): RegExpExecArray | [string, string, undefined, string] | null {
  const m = AUTHORITY.exec(target);
  if (m) return m;
  const cut = target.lastIndexOf(':');
  const host = target.slice(0, cut);
  const port = target.slice(cut + 1);
  return cut > 0 && isIPv6(host) && /^\d{1,5}$/.test(port) ? [target, host, undefined, port] : null;
}

/** A `lookup` that answers with the addresses the guard vetted and never asks DNS again. */
function vettedLookup(addresses: ResolvedAddress[]): LookupFunction {
  return (_host, options, cb) => {
    if (options.all) cb(null, addresses.map((a) => ({ address: a.address, family: a.family })));
    else cb(null, addresses[0].address, addresses[0].family);
  };
}

function plain(status: number, reason: string, text: string): string {
  const body = `${text}\n`;
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

/**
 * The egress proxy of one sandboxed tool call: an HTTP/1.1 forward proxy on a
 * Unix socket that the call's sandbox gets bound in (its only way out). It
 * carries CONNECT tunnels (HTTPS, or any TCP the client wraps in CONNECT) and
 * absolute-form plain-HTTP requests, each only after `vetEgress` (the
 * webhook/model-endpoint address rules, Troupe's own services, the agent's
 * allowlist), and connects to the vetted addresses themselves. A refusal is a
 * 403 (503 when the call has too many connections open), which clients report
 * as an ordinary proxy or connection error.
 */
export async function startEgressProxy(socketPath: string, opts: EgressProxyOptions = {}): Promise<EgressProxy> {
  const limits = { ...EGRESS_DEFAULTS, ...definedOnly(opts) };
  const open = new Set<Duplex>();
  let active = 0;
  const track = (s: Duplex) => {
    open.add(s);
    s.once('close', () => open.delete(s));
    // The proxy runs inside the worker: no socket error of a tool's may go unhandled there.
    s.on('error', () => s.destroy());
  };

  /** Takes a connection slot, or refuses; the slot is freed once, when `release` runs. */
  const admit = async (host: string, port: number): Promise<{ ok: true; addresses: ResolvedAddress[]; release: () => void } | { ok: false; status: number; message: string }> => {
    if (active >= limits.maxConnections) {
      opts.onRefusal?.(EgressRefusal.tooManyConnections);
      return { ok: false, status: 503, message: `egress refused: this tool call already has ${limits.maxConnections} connections open` };
    }
    active++;
    let released = false;
    const release = () => {
      if (!released) active--;
      released = true;
    };
    const verdict = await vetEgress(host, port, opts).catch(() => ({ ok: false as const, reason: EgressRefusal.unresolvable, message: `${host} could not be checked` }));
    if (verdict.ok) return { ok: true, addresses: verdict.addresses, release };
    release();
    opts.onRefusal?.(verdict.reason);
    return { ok: false, status: 403, message: `egress refused: ${verdict.message}` };
  };

  const server = http.createServer({ maxHeaderSize: limits.maxHeaderBytes, headersTimeout: limits.connectTimeoutMs, requestTimeout: 0, keepAliveTimeout: 5000 });
  // Idle keep-alive connections to the proxy are bounded too, not only the tunnels.
  server.maxConnections = limits.maxConnections * 2;
  server.timeout = limits.idleTimeoutMs;
  server.on('connection', track);
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (socket.writable) socket.end(err.code === 'HPE_HEADER_OVERFLOW' ? plain(431, 'Request Header Fields Too Large', 'request head too large') : plain(400, 'Bad Request', 'bad request'));
    socket.destroy();
  });
  // The stream is the client's net.Socket (or a test's Duplex), detached from the HTTP parser.
  server.on('connect', (req: http.IncomingMessage, client: Duplex, head: Buffer) => void tunnel(req, client as net.Socket, head));
  server.on('upgrade', (_req: http.IncomingMessage, client: Duplex) => {
    opts.onRefusal?.(EgressRefusal.badTarget);
    client.end(plain(400, 'Bad Request', 'egress refused: send upgrades (WebSocket) through a CONNECT tunnel'));
  });
  server.on('request', (req, res) => void forward(req, res));

  async function tunnel(req: http.IncomingMessage, client: net.Socket, head: Buffer): Promise<void> {
    client.on('error', () => client.destroy());
    const m = authority(req.url ?? '');
    if (!m) {
      opts.onRefusal?.(EgressRefusal.badTarget);
      client.end(plain(400, 'Bad Request', 'egress refused: CONNECT needs host:port'));
      return;
    }
    const host = m[1] ?? m[2];
    const admitted = await admit(host, Number(m[3]));
    if (!admitted.ok) return void client.end(plain(admitted.status, admitted.status === 403 ? 'Forbidden' : 'Service Unavailable', admitted.message));
    if (client.destroyed) return admitted.release();
    const upstream = net.connect({ host, port: Number(m[3]), lookup: vettedLookup(admitted.addresses) });
    track(upstream);
    upstream.once('close', admitted.release);
    client.once('close', () => upstream.destroy());
    const connectTimer = setTimeout(() => upstream.destroy(new Error('connect timeout')), limits.connectTimeoutMs);
    let established = false;
    upstream.once('connect', () => {
      clearTimeout(connectTimer);
      established = true;
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      for (const s of [client, upstream]) s.setTimeout(limits.idleTimeoutMs, () => s.destroy());
      client.pipe(upstream).pipe(client);
    });
    upstream.on('error', () => {
      clearTimeout(connectTimer);
      // Before the 200, the client hears why; after it, the tunnel just ends, as a dropped connection does.
      if (!established && client.writable) client.end(plain(502, 'Bad Gateway', `egress: could not connect to ${host}:${m[3]}`));
      else client.destroy();
    });
  }

  async function forward(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      opts.onRefusal?.(EgressRefusal.badTarget);
      return void res.writeHead(400, { 'content-type': 'text/plain', connection: 'close' }).end('egress refused: send absolute http:// URLs, or CONNECT for anything else\n');
    }
    if (url.protocol !== 'http:' || url.username || url.password) {
      opts.onRefusal?.(EgressRefusal.badTarget);
      return void res.writeHead(400, { 'content-type': 'text/plain', connection: 'close' }).end('egress refused: only plain http:// URLs without credentials are forwarded; use CONNECT for https\n');
    }
    const port = url.port === '' ? 80 : Number(url.port);
    const admitted = await admit(url.hostname, port);
    if (!admitted.ok) return void res.writeHead(admitted.status, { 'content-type': 'text/plain', connection: 'close' }).end(`${admitted.message}\n`);
    res.once('close', admitted.release);
    const headers: string[] = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i].toLowerCase();
      if (!HOP_BY_HOP.has(name) && name !== 'host') headers.push(req.rawHeaders[i], req.rawHeaders[i + 1]);
    }
    headers.push('Host', url.host);
    const upstream = http.request({ host: url.hostname, port, method: req.method, path: `${url.pathname}${url.search}`, headers, agent: false, setHost: false, lookup: vettedLookup(admitted.addresses), timeout: limits.idleTimeoutMs });
    upstream.on('socket', (socket) => {
      track(socket);
      const timer = setTimeout(() => upstream.destroy(new Error('connect timeout')), limits.connectTimeoutMs);
      socket.once('connect', () => clearTimeout(timer)).once('close', () => clearTimeout(timer));
    });
    upstream.on('timeout', () => upstream.destroy(new Error('idle timeout')));
    upstream.on('response', (up) => {
      const out: string[] = [];
      for (let i = 0; i < up.rawHeaders.length; i += 2) if (!HOP_BY_HOP.has(up.rawHeaders[i].toLowerCase())) out.push(up.rawHeaders[i], up.rawHeaders[i + 1]);
      res.writeHead(up.statusCode ?? 502, up.statusMessage, out);
      up.pipe(res);
      up.on('error', () => res.destroy());
    });
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain', connection: 'close' }).end(`egress: could not reach ${url.host}\n`);
      else res.destroy();
    });
    res.once('close', () => upstream.destroy());
    req.pipe(upstream);
  }

  await listen(server, socketPath);
  let closing: Promise<void> | null = null;
  return {
    socketPath,
    close() {
      closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          for (const s of open) s.destroy();
        });
        await unlink(socketPath).catch(() => undefined);
      })();
      return closing;
    },
  };
}

function definedOnly(opts: EgressProxyOptions): Partial<EgressLimits> {
  const out: Partial<EgressLimits> = {};
  for (const k of Object.keys(EGRESS_DEFAULTS) as Array<keyof EgressLimits>) if (opts[k] !== undefined) out[k] = opts[k];
  return out;
}

/**
 * Listens on the socket path, readable and writable by any user: the sandboxed
 * tool may run under another uid, and the path lives in a directory others
 * cannot list.
 */
async function listen(server: http.Server, socketPath: string): Promise<void> {
  await unlink(socketPath).catch(() => undefined);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  await chmod(socketPath, 0o666);
}
