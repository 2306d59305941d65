import { isIPv4, isIPv6 } from 'node:net';

/**
 * Whether an IP address is public unicast: somewhere an outbound webhook may
 * connect to. Everything in the IANA special-purpose registries that is not
 * globally reachable is refused, plus a few globally reachable oddities
 * (6to4 relay anycast, the whole 2001::/23 block) that no webhook needs.
 * IPv6 forms that embed an IPv4 address (IPv4-mapped, NAT64, 6to4) are judged
 * by the embedded address, because that is where the packets end up.
 */
export function isPublicUnicast(ip: string): boolean {
  const bare = stripZone(ip);
  if (isIPv4(bare)) return isPublicV4(v4ToInt(bare));
  if (isIPv6(bare)) return isPublicV6(v6ToBytes(bare));
  return false;
}

/**
 * Whether a connection to this address lands on the connecting host itself
 * (loopback, or the unspecified address, which Linux treats as local), in any
 * of its spellings (IPv4-mapped included). The egress proxy refuses Troupe's
 * own listeners there even when the public-address rule is lifted for tests.
 */
export function isThisHost(ip: string): boolean {
  const bare = stripZone(ip);
  if (isIPv4(bare)) return sameV4Prefix(v4ToInt(bare), 0x7f000000, 8) || sameV4Prefix(v4ToInt(bare), 0, 8);
  if (!isIPv6(bare)) return false;
  const b = v6ToBytes(bare);
  if (samePrefix(b, MAPPED, 96)) return isThisHost(`${b[12]}.${b[13]}.${b[14]}.${b[15]}`);
  return b.slice(0, 15).every((x) => x === 0) && b[15] <= 1; // :: and ::1
}

/** [network, prefix length] pairs of IPv4 space that is never a webhook target. */
const V4_BLOCKED: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8], // "this network", includes 0.0.0.0 unspecified
  ['10.0.0.0', 8], // RFC 1918
  ['100.64.0.0', 10], // shared address space (CGNAT)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, includes the 169.254.169.254 metadata service
  ['172.16.0.0', 12], // RFC 1918
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // TEST-NET-1 (documentation)
  ['192.88.99.0', 24], // 6to4 relay anycast (deprecated)
  ['192.168.0.0', 16], // RFC 1918
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // TEST-NET-2 (documentation)
  ['203.0.113.0', 24], // TEST-NET-3 (documentation)
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, includes 255.255.255.255 broadcast
];

const V4_BLOCKED_INT = V4_BLOCKED.map(([net, len]) => [v4ToInt(net), len] as const);

function isPublicV4(addr: number): boolean {
  return !V4_BLOCKED_INT.some(([net, len]) => sameV4Prefix(addr, net, len));
}

function sameV4Prefix(a: number, b: number, len: number): boolean {
  if (len === 0) return true;
  const shift = 32 - len;
  return a >>> shift === b >>> shift;
}

/** [network, prefix length] pairs of IPv6 space refused inside 2000::/3 (global unicast). */
const V6_BLOCKED: ReadonlyArray<readonly [string, number]> = [
  ['2001::', 23], // IETF protocol assignments: Teredo, benchmarking, ORCHID, ...
  ['2001:db8::', 32], // documentation
  ['3fff::', 20], // documentation (RFC 9637)
];

const V6_BLOCKED_BYTES = V6_BLOCKED.map(([net, len]) => [v6ToBytes(net), len] as const);
const MAPPED = v6ToBytes('::ffff:0:0');
const NAT64 = v6ToBytes('64:ff9b::');
const SIX_TO_FOUR = v6ToBytes('2002::');

function isPublicV6(b: Uint8Array): boolean {
  // IPv4-mapped (::ffff:a.b.c.d) and well-known NAT64 (64:ff9b::a.b.c.d) reach the embedded IPv4 address.
  if (samePrefix(b, MAPPED, 96) || samePrefix(b, NAT64, 96)) return isPublicV4(readV4(b, 12));
  // 6to4 (2002:AABB:CCDD::/48) tunnels to the embedded IPv4 address.
  if (samePrefix(b, SIX_TO_FOUR, 16)) return isPublicV4(readV4(b, 2));
  // Only 2000::/3 is allocated global unicast; that alone rules out ::, ::1, ::/96,
  // 64:ff9b:1::/48, 100::/64, fc00::/7 (ULA), fe80::/10, fec0::/10 and ff00::/8 (multicast).
  if ((b[0] & 0xe0) !== 0x20) return false;
  return !V6_BLOCKED_BYTES.some(([net, len]) => samePrefix(b, net, len));
}

function samePrefix(a: Uint8Array, b: Uint8Array, len: number): boolean {
  const whole = Math.floor(len / 8);
  for (let i = 0; i < whole; i++) if (a[i] !== b[i]) return false;
  const rest = len % 8;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (a[whole] & mask) === (b[whole] & mask);
}

function readV4(b: Uint8Array, at: number): number {
  return ((b[at] << 24) | (b[at + 1] << 16) | (b[at + 2] << 8) | b[at + 3]) >>> 0;
}

function v4ToInt(ip: string): number {
  return ip.split('.').reduce((acc, part) => ((acc << 8) | Number(part)) >>> 0, 0);
}

function stripZone(ip: string): string {
  const s = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const pct = s.indexOf('%');
  // A zone id only exists on link-local scopes; keep the address part, which is then refused.
  return pct >= 0 ? s.slice(0, pct) : s;
}

/** Parses a valid IPv6 text form (checked by isIPv6 first) into 16 bytes. */
function v6ToBytes(ip: string): Uint8Array {
  let text = ip;
  const lastColon = text.lastIndexOf(':');
  const last = text.slice(lastColon + 1);
  if (last.includes('.')) {
    // A trailing dotted quad is two 16-bit groups written differently.
    const v4 = v4ToInt(last);
    text = `${text.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const groupsOf = (s: string): number[] => (s === '' ? [] : s.split(':').map((x) => parseInt(x, 16)));
  const gap = text.indexOf('::');
  let groups: number[];
  if (gap < 0) groups = groupsOf(text);
  else {
    const left = groupsOf(text.slice(0, gap));
    const right = groupsOf(text.slice(gap + 2));
    groups = [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  }
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    bytes[i * 2] = g >> 8;
    bytes[i * 2 + 1] = g & 0xff;
  });
  return bytes;
}
