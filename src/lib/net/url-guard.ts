import { isIP } from 'node:net';
import { InvalidRequestError } from '../../domain/errors.js';
import { isPublicUnicast } from './ip-ranges.js';
import { resolveWithin, systemResolver, type ResolvedAddress, type Resolver } from './resolver.js';

export interface UrlGuardOptions {
  /** TROUPE_WEBHOOKS_ALLOW_PRIVATE: lifts the HTTPS and address rules for local runs. */
  allowPrivate: boolean;
  resolver?: Resolver;
  /** Request field the URL came from, for the error's `param`. */
  param?: string;
  /** Stem of the error codes (`<stem>_not_public`, ...); `webhook_url` unless a model endpoint is checked. */
  codeStem?: string;
}

export interface CheckedUrl {
  url: URL;
  /** The checked addresses; empty when allowPrivate skipped resolution. */
  addresses: ResolvedAddress[];
}

/** A URL refused by the webhook URL rules; a 400 for a client, a terminal failure for a delivery. */
export class UnsafeUrlError extends InvalidRequestError {
  constructor(message: string, code: string, param = 'webhook_url') {
    super(message, param, code);
  }
}

const MAX_URL_LENGTH = 2048;

/**
 * The webhook URL rules: an absolute HTTPS URL without credentials whose host
 * resolves only to public unicast addresses. With `allowPrivate`, plain HTTP
 * and any address are accepted (and the name is not resolved), but
 * credentials in the URL are still refused: they would end up in logs.
 */
export async function validateWebhookUrl(raw: string, opts: UrlGuardOptions): Promise<CheckedUrl> {
  const param = opts.param ?? 'webhook_url';
  const stem = opts.codeStem ?? 'webhook_url';
  const url = parseAbsolute(raw, param, stem);
  const schemes = opts.allowPrivate ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol)) {
    throw new UnsafeUrlError(`${param} must use ${opts.allowPrivate ? 'http or https' : 'https'}.`, `${stem}_not_https`, param);
  }
  if (url.username !== '' || url.password !== '') {
    throw new UnsafeUrlError(`${param} must not contain a username or password.`, `${stem}_has_credentials`, param);
  }
  if (opts.allowPrivate) return { url, addresses: [] };
  const addresses = await addressesOf(url.hostname, opts.resolver ?? systemResolver, param, stem);
  assertAllPublic(url.hostname, addresses, param, stem);
  return { url, addresses };
}

function parseAbsolute(raw: string, param: string, stem: string): URL {
  if (raw.length > MAX_URL_LENGTH) throw new UnsafeUrlError(`${param} is longer than ${MAX_URL_LENGTH} characters.`, `invalid_${stem}`, param);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UnsafeUrlError(`${param} must be an absolute URL.`, `invalid_${stem}`, param);
  }
  if (url.hostname === '') throw new UnsafeUrlError(`${param} must name a host.`, `invalid_${stem}`, param);
  return url;
}

/** `[::1]` → `::1`; WHATWG URL keeps the brackets on IPv6 hosts. */
export function hostOf(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

/** An IP literal is its own (only) address; a name is resolved. */
export async function addressesOf(hostname: string, resolver: Resolver, param = 'webhook_url', stem = 'webhook_url'): Promise<ResolvedAddress[]> {
  const host = hostOf(hostname);
  const family = isIP(host);
  if (family !== 0) return [{ address: host, family: family as 4 | 6 }];
  let found: ResolvedAddress[];
  try {
    found = await resolveWithin(resolver, host);
  } catch (err) {
    throw new UnsafeUrlError(`${param} host ${host} could not be resolved: ${(err as Error).message}`, `${stem}_unresolvable`, param);
  }
  if (found.length === 0) throw new UnsafeUrlError(`${param} host ${host} resolves to no address.`, `${stem}_unresolvable`, param);
  return found;
}

/**
 * Every address must be public: a name with one private answer could be
 * steered to it. The refusal names the host, never the address it resolved
 * to: that would hand a tenant a lookup service for the internal DNS.
 */
export function assertAllPublic(hostname: string, addresses: ResolvedAddress[], param = 'webhook_url', stem = 'webhook_url'): void {
  const bad = addresses.find((a) => !isPublicUnicast(a.address));
  if (bad) {
    throw new UnsafeUrlError(
      `${param} host ${hostOf(hostname)} ${isIP(hostOf(hostname)) ? 'is' : 'resolves to an address that is'} not a public address.`,
      `${stem}_not_public`,
      param,
    );
  }
}
