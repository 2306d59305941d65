/**
 * Preloaded (`--require`) into a sandbox process that has no internet access
 * on a host without network namespaces. It replaces every way out that Node
 * offers (TCP/IPC sockets, UDP, DNS, fetch) with a refusal, and locks the
 * replacements so the tool cannot put the originals back: the originals stay
 * only in Node's internals, and the permission model blocks process.binding.
 */
import dgram = require('node:dgram');
import dns = require('node:dns');
import net = require('node:net');

export const NETWORK_DENIED = 'ERR_SANDBOX_NETWORK';

function deny(): never {
  const err = new Error('Network access is disabled for this tool (sandbox.internet_access is false).') as Error & { code: string };
  err.code = NETWORK_DENIED;
  throw err;
}

async function denyAsync(): Promise<never> {
  return deny();
}

function lock(target: object, name: string, value: unknown): void {
  Object.defineProperty(target, name, { value, writable: false, configurable: false, enumerable: false });
}

function lockAll(target: object, names: string[], value: unknown): void {
  for (const n of names) if (n in target) lock(target, n, value);
}

const DNS_METHODS = ['lookup', 'lookupService', 'resolve', 'resolve4', 'resolve6', 'resolveAny', 'resolveCaa', 'resolveCname', 'resolveMx', 'resolveNaptr', 'resolveNs', 'resolvePtr', 'resolveSoa', 'resolveSrv', 'resolveTxt', 'reverse'];

lock(net.Socket.prototype, 'connect', deny);
lock(net.Server.prototype, 'listen', deny);
lockAll(dgram.Socket.prototype, ['bind', 'connect', 'send'], deny);
lockAll(dns, DNS_METHODS, deny);
lockAll(dns.Resolver.prototype, DNS_METHODS, deny);
lockAll(dns.promises, DNS_METHODS, denyAsync);
lockAll(dns.promises.Resolver.prototype, DNS_METHODS, denyAsync);
lock(globalThis, 'fetch', denyAsync);
