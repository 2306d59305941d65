import { networkInterfaces } from 'node:os';
import { isIP } from 'node:net';
import { hostAllowed, normalizeHost } from '../../domain/allowed-domains.js';
import { isPublicUnicast, isThisHost } from './ip-ranges.js';
import { resolveWithin, systemResolver, type ResolvedAddress, type Resolver } from './resolver.js';
import { hostOf } from './url-guard.js';

/** Why the egress proxy refused a connection: the `reason` label of troupe_egress_refusals_total. */
export const EgressRefusal = Object.freeze({
  /** Not a host:port or http:// URL the proxy carries. */
  badTarget: 'bad_target',
  /** The agent's `sandbox.allowed_domains` does not list the host. */
  notAllowed: 'not_allowed',
  unresolvable: 'unresolvable',
  /** Some address of the host is loopback, private, link-local, CGNAT, metadata, multicast, ... */
  notPublic: 'not_public',
  /** One of Troupe's own services (Redis, MongoDB, its listeners) or an address of this host. */
  troupeOwn: 'troupe_own',
  /** The call already has as many connections open as it may. */
  tooManyConnections: 'too_many_connections',
} as const);
export type EgressRefusalReason = (typeof EgressRefusal)[keyof typeof EgressRefusal];

/** A service of Troupe's own: `host` `*` is every address of this machine; no `port` is every port. */
export interface OwnEndpoint {
  host: string;
  port?: number;
}

export interface EgressGuardOptions {
  /** `sandbox.allowed_domains`; absent = any public host. */
  allowedDomains?: readonly string[];
  /** TROUPE_EGRESS_ALLOW_PRIVATE: lifts the public-address rule (local runs, tests); Troupe's own services stay refused. */
  allowPrivate?: boolean;
  own?: OwnAddresses;
  resolver?: Resolver;
}

export type EgressVerdict = { ok: true; addresses: ResolvedAddress[] } | { ok: false; reason: EgressRefusalReason; message: string };

const OWN_TTL_MS = 30_000;

/**
 * The addresses of Troupe's own services, re-resolved at most every 30 s: the
 * configured Redis and MongoDB hosts, its listeners' ports on this machine,
 * and every port of this machine's public addresses (whatever listens on
 * 0.0.0.0, Troupe's listeners included, answers there too). This machine's
 * private addresses are left to the public-address rule, so that lifting it
 * for a local run still refuses Troupe's own ports but reaches a local fake.
 */
export class OwnAddresses {
  private cached: { at: number; value: Promise<Known> } | null = null;

  constructor(
    private readonly endpoints: readonly OwnEndpoint[],
    private readonly resolver: Resolver = systemResolver,
  ) {}

  async includes(address: string, port: number): Promise<boolean> {
    const known = await this.known();
    const ip = canonical(address);
    const local = isThisHost(ip) || known.interfaces.has(ip);
    if (local && isPublicUnicast(ip)) return true;
    return known.services.some((e) => (e.port === undefined || e.port === port) && (e.address === '*' ? local : e.address === ip));
  }

  private known(): Promise<Known> {
    const now = Date.now();
    if (!this.cached || now - this.cached.at > OWN_TTL_MS) this.cached = { at: now, value: this.load() };
    return this.cached.value;
  }

  private async load(): Promise<Known> {
    const interfaces = new Set<string>();
    for (const list of Object.values(networkInterfaces())) for (const i of list ?? []) interfaces.add(canonical(i.address));
    const services: Known['services'] = [];
    for (const e of this.endpoints) {
      if (e.host === '*') services.push({ address: '*', port: e.port });
      // A host that does not resolve now is not reachable through us either; the next load tries again.
      else for (const a of await lookupAll(this.resolver, e.host)) services.push({ address: canonical(a.address), port: e.port });
    }
    return { interfaces, services };
  }
}

interface Known {
  interfaces: Set<string>;
  services: Array<{ address: string; port?: number }>;
}

async function lookupAll(resolver: Resolver, host: string): Promise<ResolvedAddress[]> {
  const bare = hostOf(host);
  if (isIP(bare)) return [{ address: bare, family: isIP(bare) as 4 | 6 }];
  return resolveWithin(resolver, bare).catch(() => []);
}

/** IPv4-mapped IPv6 compares as its IPv4 address; a zone id is dropped. */
function canonical(ip: string): string {
  const lower = ip.toLowerCase().replace(/%.*$/, '');
  return lower.startsWith('::ffff:') && isIP(lower.slice(7)) === 4 ? lower.slice(7) : lower;
}

const refuse = (reason: EgressRefusalReason, message: string): EgressVerdict => ({ ok: false, reason, message });

/**
 * The egress decision for one connection the tool asked for, by name and
 * port: the allowlist on the name, then every address the name resolves to
 * must be public and none may be Troupe's own (one bad answer could be chosen
 * at connect). The caller connects only to the addresses returned, so a DNS
 * answer that changes afterwards (rebinding) cannot steer the connection. The
 * message names what the tool asked for and never a resolved address.
 */
export async function vetEgress(host: string, port: number, opts: EgressGuardOptions): Promise<EgressVerdict> {
  const name = normalizeHost(hostOf(host));
  if (name === '' || !Number.isInteger(port) || port < 1 || port > 65535) return refuse(EgressRefusal.badTarget, 'the target must be a host and a port between 1 and 65535');
  const literal = isIP(name);
  if (opts.allowedDomains && (literal !== 0 || !hostAllowed(name, opts.allowedDomains))) {
    return refuse(EgressRefusal.notAllowed, `${name} is not in this agent's sandbox.allowed_domains`);
  }
  let addresses: ResolvedAddress[];
  if (literal !== 0) addresses = [{ address: name, family: literal as 4 | 6 }];
  else {
    addresses = await resolveWithin(opts.resolver ?? systemResolver, name).catch(() => []);
    if (addresses.length === 0) return refuse(EgressRefusal.unresolvable, `${name} could not be resolved`);
  }
  if (!opts.allowPrivate && addresses.some((a) => !isPublicUnicast(a.address))) return refuse(EgressRefusal.notPublic, `${name} is not a public address`);
  if (opts.own) {
    for (const a of addresses) if (await opts.own.includes(a.address, port)) return refuse(EgressRefusal.troupeOwn, `${name}:${port} is one of Troupe's own services`);
  }
  return { ok: true, addresses };
}
