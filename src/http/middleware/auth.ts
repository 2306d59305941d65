import { AuthenticationError, PermissionError } from '../../domain/errors.js';
import { ExpiringCache } from '../../domain/expiring-cache.js';
import { type ApiKeyDoc, type ApiKeyStore, type KeyKindName } from '../../store/api-keys.js';

const BEARER = /^Bearer\s+(\S+)\s*$/i;
const CACHE_TTL_MS = 5000;
const CACHE_MAX = 10_000;

/**
 * Resolves a bearer key to its org. Lookups are cached for a few seconds so a
 * hot path (the router, SSE reconnect storms) does not hit Mongo per request;
 * a revocation therefore takes up to CACHE_TTL_MS to apply everywhere.
 */
export class KeyAuthenticator {
  /** Misses are cached too (as null), so a storm of bad keys does not reach Mongo either. */
  private readonly cache = new ExpiringCache<ApiKeyDoc | null>(CACHE_TTL_MS, CACHE_MAX);

  constructor(private readonly keys: ApiKeyStore) {}

  async authenticate(header: string | undefined, kind: KeyKindName): Promise<{ orgId: string; key: ApiKeyDoc }> {
    const m = header ? BEARER.exec(header) : null;
    if (!m) throw new AuthenticationError('Missing API key. Send it as "Authorization: Bearer <key>".', 'missing_api_key');
    return this.authenticateKey(m[1], kind);
  }

  /** The key itself, however it was sent (Bearer, or Anthropic's `x-api-key` on the routing interface). */
  async authenticateKey(key: string, kind: KeyKindName): Promise<{ orgId: string; key: ApiKeyDoc }> {
    const doc = await this.lookup(key);
    if (!doc) throw new AuthenticationError('The API key is not valid or has been revoked.', 'invalid_api_key');
    if (doc.kind !== kind) {
      if (kind === 'routing') throw new AuthenticationError('This endpoint takes a routing key; the key given is not one.', 'invalid_api_key');
      throw new PermissionError(`This endpoint takes an API key; the key given is a ${doc.kind} key.`);
    }
    return { orgId: doc.org_id, key: doc };
  }

  /**
   * Cached by the key as sent, not by its hash: a sha256 per request was on the router's hot path. The key is
   * already in this process's memory for the request's life; the cache keeps it a few seconds more.
   */
  private async lookup(key: string): Promise<ApiKeyDoc | null> {
    const hit = this.cache.get(key);
    if (hit !== undefined) return hit;
    const doc = await this.keys.findActive(key);
    this.cache.set(key, doc);
    return doc;
  }
}
