import { lookup } from 'node:dns/promises';
import { within } from '../../domain/deadline.js';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/**
 * Name → every address it resolves to. Injectable so tests decide what a name
 * resolves to, and so the URL guard and the connection use the same answer.
 */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** How long a webhook host may take to resolve before it counts as unresolvable. */
export const RESOLVE_TIMEOUT_MS = 5000;

/**
 * The system resolver (getaddrinfo, so /etc/hosts counts), which is what a
 * plain socket connect would use; all addresses, in the order given.
 */
export const systemResolver: Resolver = async (hostname) => {
  const found = await lookup(hostname, { all: true, verbatim: true });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/** Runs the resolver with a deadline, so a hung DNS server cannot hold a request open. */
export async function resolveWithin(resolver: Resolver, hostname: string, ms = RESOLVE_TIMEOUT_MS): Promise<ResolvedAddress[]> {
  return within(resolver(hostname), ms, () => {
    throw new Error(`resolving ${hostname} took longer than ${ms} ms`);
  });
}
