import { AuthenticationError, PermissionError } from '../../../domain/errors.js';
import { ExpiringCache } from '../../../domain/expiring-cache.js';
import type { AuthFailureLimiter } from '../../../lib/limits/auth-failures.js';
import { hashKey, type ApiKeyDoc, type ApiKeyStore, type KeyKindName } from '../../../store/api-keys.js';

/**
 * The longest key Troupe accepts: generated keys are 38 characters and a bootstrap key at most 200 (config.ts).
 * Anything longer is refused as invalid before it is hashed, cached or looked up.
 */
export const MAX_KEY_LENGTH = 200;
const BEARER = /^Bearer\s+(\S+)\s*$/i;
/** Room for the scheme and spaces around a key of MAX_KEY_LENGTH; a longer header is not parsed at all. */
const MAX_HEADER_LENGTH = MAX_KEY_LENGTH + 64;
const CACHE_TTL_MS = 5000;
const CACHE_MAX = 10_000;

/**
 * Resolves a bearer key to its org. Lookups are cached for a few seconds so a
 * hot path (the router, SSE reconnect storms) does not hit Mongo per request;
 * a revocation therefore takes up to CACHE_TTL_MS to apply everywhere.
 * Given the client's address and a failure limiter, an invalid key counts as
 * a failure of that address, and an address past its limit is refused (429)
 * before its key is looked at (limits/auth-failures.ts).
 */
export class KeyAuthenticator {
  /**
   * By the key's hash, never the key: the raw key would otherwise sit in memory for a few seconds after its
   * request, for hits and for misses alike (a heap dump would hold every key recently tried). Misses are
   * cached too (as null), so a storm of bad keys does not reach Mongo either.
   */
  private readonly cache = new ExpiringCache<ApiKeyDoc | null>(CACHE_TTL_MS, CACHE_MAX);

  constructor(
    private readonly keys: ApiKeyStore,
    private readonly failures?: AuthFailureLimiter,
  ) {}

  async authenticate(header: string | undefined, kind: KeyKindName, address?: string): Promise<{ orgId: string; key: ApiKeyDoc }> {
    if (!header) throw new AuthenticationError('Missing API key. Send it as "Authorization: Bearer <key>".', 'missing_api_key');
    const m = header.length <= MAX_HEADER_LENGTH ? BEARER.exec(header) : null;
    if (!m) {
      if (header.length > MAX_HEADER_LENGTH) return this.refuse(address);
      throw new AuthenticationError('Missing API key. Send it as "Authorization: Bearer <key>".', 'missing_api_key');
    }
    return this.authenticateKey(m[1], kind, address);
  }

  /** The key itself, however it was sent (Bearer, or Anthropic's `x-api-key` on the routing interface). */
  async authenticateKey(key: string, kind: KeyKindName, address?: string): Promise<{ orgId: string; key: ApiKeyDoc }> {
    if (address !== undefined) this.failures?.check(address);
    const doc = key.length <= MAX_KEY_LENGTH ? await this.lookup(key) : null;
    if (!doc) return this.refuse(address);
    if (doc.kind !== kind) {
      if (kind === 'routing') throw new AuthenticationError('This endpoint takes a routing key; the key given is not one.', 'invalid_api_key');
      throw new PermissionError(`This endpoint takes an API key; the key given is a ${doc.kind} key.`);
    }
    return { orgId: doc.org_id, key: doc };
  }

  /** The 401 of a key that is not valid, or the 429 once its address has failed too often. */
  private async refuse(address: string | undefined): Promise<never> {
    if (address !== undefined) this.failures?.check(address);
    const limited = address !== undefined && this.failures ? await this.failures.failed(address) : null;
    throw limited ?? new AuthenticationError('The API key is not valid or has been revoked.', 'invalid_api_key');
  }

  private async lookup(key: string): Promise<ApiKeyDoc | null> {
    const hash = hashKey(key);
    const hit = this.cache.get(hash);
    if (hit !== undefined) return hit;
    const doc = await this.keys.findActiveByHash(hash);
    this.cache.set(hash, doc);
    return doc;
  }
}
