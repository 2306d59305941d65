/**
 * `sandbox.allowed_domains`: the hosts a tool with internet access may reach
 * through the egress proxy. An entry is a host name (`api.example.com`, which
 * matches that name only) or a wildcard (`*.example.com`, which matches every
 * name below example.com at any depth, but not example.com itself: list both
 * when both are wanted). Matching ignores case and a trailing dot. IP literals
 * are not entries: an allowlist names domains, and a tool that connects to a
 * bare address while an allowlist is set is refused.
 */

export const MAX_ALLOWED_DOMAINS = 100;

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** Lower case, without the trailing dot of a fully qualified name. */
export function normalizeHost(host: string): string {
  const lower = host.toLowerCase();
  return lower.endsWith('.') ? lower.slice(0, -1) : lower;
}

/** Why an allowlist entry is not one, or null when it is (checked on the normalized entry). */
export function allowedDomainProblem(entry: string): string | null {
  const name = normalizeHost(entry);
  const wildcard = name.startsWith('*.');
  const rest = wildcard ? name.slice(2) : name;
  if (rest.length === 0 || rest.length > 253) return 'must be a host name of at most 253 characters';
  // A wildcard elsewhere than the whole first label (`a*.b.com`, `*.*.com`) is not supported.
  if (rest.includes('*')) return 'may hold a wildcard only as its first label, as in *.example.com';
  const labels = rest.split('.');
  if (!labels.every((l) => LABEL.test(l))) return 'must be an ASCII host name (letters, digits and hyphens; write other names in punycode, xn--...)';
  if (/^\d+$/.test(labels[labels.length - 1])) return 'must be a domain name, not an IP address';
  // `*.com` would open a whole top-level domain; a public suffix list would be needed to refuse `*.co.uk` too.
  if (wildcard && labels.length < 2) return 'must name at least two labels after *., as in *.example.com';
  return null;
}

/** Whether `host` (as the tool named it) is allowed by the list. */
export function hostAllowed(host: string, allowed: readonly string[]): boolean {
  const name = normalizeHost(host);
  return allowed.some((raw) => {
    const entry = normalizeHost(raw);
    if (!entry.startsWith('*.')) return name === entry;
    const suffix = entry.slice(1); // ".example.com"
    return name.length > suffix.length && name.endsWith(suffix);
  });
}
