import assert from 'node:assert/strict';
import { OwnAddresses, vetEgress, type EgressVerdict } from '../../src/lib/net/egress-guard.js';
import type { Resolver } from '../../src/lib/net/resolver.js';

/** Names → addresses, as a DNS server (or a rebinding attacker's) would answer; anything else does not resolve. */
const resolverOf = (table: Record<string, string[]>): Resolver => async (host) => {
  const list = table[host];
  if (!list) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }) as const);
};

const PUBLIC = '93.184.216.34';
const table: Record<string, string[]> = {
  'public.test': [PUBLIC],
  'loopback.test': ['127.0.0.1'],
  'metadata.test': ['169.254.169.254'],
  'private.test': ['10.0.0.1'],
  'cgnat.test': ['100.64.0.1'],
  'multicast.test': ['224.0.0.251'],
  'zero.test': ['0.0.0.0'],
  'v6-loopback.test': ['::1'],
  'mapped.test': ['::ffff:127.0.0.1'],
  'ula.test': ['fd00::1'],
  // One public and one private answer: the client could be steered to either.
  'mixed.test': [PUBLIC, '10.1.2.3'],
  'redis.test': ['192.0.2.10'],
};
const resolver = resolverOf(table);

function refused(v: EgressVerdict, reason: string): string {
  assert.equal(v.ok, false);
  if (v.ok) return '';
  assert.equal(v.reason, reason, v.message);
  return v.message;
}

describe('egress guard (vetEgress)', () => {
  it('passes a name whose every address is public, with the addresses to connect to', async () => {
    assert.deepEqual(await vetEgress('public.test', 443, { resolver }), { ok: true, addresses: [{ address: PUBLIC, family: 4 }] });
    assert.deepEqual(await vetEgress(PUBLIC, 80, { resolver }), { ok: true, addresses: [{ address: PUBLIC, family: 4 }] });
  });

  it('refuses loopback, private, link-local (metadata), CGNAT, multicast, unspecified and v6 local names and literals, without naming the address', async () => {
    for (const name of Object.keys(table).filter((n) => n !== 'public.test' && n !== 'redis.test')) {
      const message = refused(await vetEgress(name, 443, { resolver }), 'not_public');
      for (const a of table[name]) assert.ok(!message.includes(a), `${name}: ${message}`);
    }
    for (const literal of ['127.0.0.1', '169.254.169.254', '10.0.0.1', '::1', '[::ffff:169.254.169.254]', '0.0.0.0', '172.16.5.4', '192.168.1.1']) {
      refused(await vetEgress(literal, 80, { resolver }), 'not_public');
    }
  });

  it('resolves through the system resolver by default: localhost is refused', async () => {
    refused(await vetEgress('localhost', 6379, {}), 'not_public');
  });

  it('refuses a name that does not resolve, a bad port and an empty host', async () => {
    refused(await vetEgress('nowhere.test', 443, { resolver }), 'unresolvable');
    refused(await vetEgress('public.test', 0, { resolver }), 'bad_target');
    refused(await vetEgress('public.test', 65536, { resolver }), 'bad_target');
    refused(await vetEgress('', 443, { resolver }), 'bad_target');
  });

  it('with an allowlist, refuses unlisted names and bare addresses before resolving', async () => {
    let asked = 0;
    const counting: Resolver = (h) => {
      asked++;
      return resolver(h);
    };
    const allowedDomains = ['public.test', '*.allowed.test'];
    assert.equal((await vetEgress('public.test', 443, { resolver: counting, allowedDomains })).ok, true);
    assert.match(refused(await vetEgress('other.test', 443, { resolver: counting, allowedDomains }), 'not_allowed'), /other\.test is not in this agent's sandbox\.allowed_domains/);
    refused(await vetEgress(PUBLIC, 443, { resolver: counting, allowedDomains }), 'not_allowed');
    assert.equal(asked, 1, 'only the listed name was resolved');
    // Listed is not enough: the address rules still apply.
    refused(await vetEgress('loop.allowed.test', 443, { resolver: resolverOf({ 'loop.allowed.test': ['127.0.0.1'] }), allowedDomains }), 'not_public');
  });

  it("refuses Troupe's own services even with the public-address rule lifted, and this host's public addresses on any port", async () => {
    const own = new OwnAddresses([{ host: 'redis.test', port: 6379 }, { host: '*', port: 8080 }, { host: 'mongo.test' }], resolverOf({ ...table, 'mongo.test': ['198.51.100.7'] }));
    const relaxed = { resolver: resolverOf({ ...table, localhost: ['127.0.0.1', '::1'] }), allowPrivate: true, own };
    refused(await vetEgress('redis.test', 6379, relaxed), 'troupe_own');
    assert.equal((await vetEgress('redis.test', 6380, relaxed)).ok, true, 'another port of that host is not Redis');
    refused(await vetEgress('198.51.100.7', 27017, relaxed), 'troupe_own');
    refused(await vetEgress('198.51.100.7', 1, relaxed), 'troupe_own');
    for (const local of ['localhost', '127.0.0.1', '127.8.9.10', '::1', '0.0.0.0', '::ffff:127.0.0.1']) refused(await vetEgress(local, 8080, relaxed), 'troupe_own');
    assert.equal((await vetEgress('127.0.0.1', 8099, relaxed)).ok, true, 'a local fake on another port is reachable in a local run');
    // The public rule comes first when it is on.
    refused(await vetEgress('redis.test', 6379, { resolver, own }), 'not_public');
  });
});
