import type { LookupAddress, LookupOptions } from 'node:dns';
import { isPublicUnicast } from './ip-ranges.js';
import { resolveWithin, systemResolver, type ResolvedAddress, type Resolver } from './resolver.js';

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** The shape of the `lookup` option of net.connect, tls.connect, http.request and undici's `connect`. */
export type LookupFunction = (hostname: string, options: LookupOptions, callback: LookupCallback) => void;

/**
 * Raised through the lookup callback; the connection attempt fails with it.
 * It does not carry the refused address: its message reaches tenants (a
 * delivery's error, a model call's), and the address would map the internal DNS.
 */
export class AddressRefusedError extends Error implements NodeJS.ErrnoException {
  override name = 'AddressRefusedError';
  code = 'ERR_ADDRESS_REFUSED';
  constructor(readonly hostname: string) {
    super(`${hostname} resolves to an address that is not a public address`);
  }
}

export interface GuardedLookupOptions {
  allowPrivate?: boolean;
  resolver?: Resolver;
}

/**
 * A `lookup` for outbound webhook connections. It resolves the name at
 * connect time (so a DNS answer changed after configuration is checked again),
 * refuses the connection if any answer is not public unicast, and hands the
 * socket only addresses it has checked, so there is no second resolution
 * between the check and the connect (DNS rebinding).
 *
 * Sockets skip `lookup` for IP-literal hosts: check those with
 * validateWebhookUrl before connecting.
 */
export function guardedLookup(opts: GuardedLookupOptions = {}): LookupFunction {
  const resolver = opts.resolver ?? systemResolver;
  return (hostname, options, callback) => {
    resolveWithin(resolver, hostname)
      .then((all) => pickChecked(hostname, all, options, opts.allowPrivate === true))
      .then(
        (checked) => {
          if (options.all) callback(null, checked.map((a) => ({ address: a.address, family: a.family })));
          else callback(null, checked[0].address, checked[0].family);
        },
        (err: NodeJS.ErrnoException) => callback(err, options.all ? [] : '', 0),
      );
  };
}

function pickChecked(hostname: string, all: ResolvedAddress[], options: LookupOptions, allowPrivate: boolean): ResolvedAddress[] {
  if (!allowPrivate) {
    const bad = all.find((a) => !isPublicUnicast(a.address));
    if (bad) throw new AddressRefusedError(hostname);
  }
  const family = options.family === 4 || options.family === 'IPv4' ? 4 : options.family === 6 || options.family === 'IPv6' ? 6 : 0;
  const usable = family === 0 ? all : all.filter((a) => a.family === family);
  if (usable.length === 0) {
    const err: NodeJS.ErrnoException = new Error(`${hostname} has no IPv${family || ''} address`);
    err.code = 'ENOTFOUND';
    throw err;
  }
  return usable;
}
