import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { isPublicUnicast } from '../../lib/net/ip-ranges.js';

/**
 * The address a request came from, for limits kept per client (failed
 * authentication). The socket's peer, unless that peer is on a private or
 * loopback address, i.e. a load balancer or proxy in front: then the last
 * entry of X-Forwarded-For, the one that proxy appended. Earlier entries are
 * whatever the client wrote and are never used, so a client cannot pick its
 * own address by sending the header through the proxy.
 */
export function clientAddress(req: IncomingMessage): string {
  const peer = normalise(req.socket.remoteAddress ?? '');
  if (!peer || isPublicUnicast(peer)) return peer || 'unknown';
  const header = req.headers['x-forwarded-for'];
  const raw = Array.isArray(header) ? header.at(-1) : header;
  const last = raw?.split(',').at(-1)?.trim();
  return last && isIP(normalise(last)) ? normalise(last) : peer;
}

/** `::ffff:1.2.3.4` (an IPv4 peer on a dual-stack socket) as `1.2.3.4`, so one client is one key. */
function normalise(ip: string): string {
  return ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip;
}
