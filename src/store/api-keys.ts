import { createHash, randomBytes } from 'node:crypto';
import type { Collection, Db } from 'mongodb';
import type { Budget } from '../domain/budget.js';
import { newId } from '../domain/ids.js';
import { isDuplicateKey } from './duplicate-key.js';

export const KeyKind = Object.freeze({ api: 'api', routing: 'routing' } as const);
export type KeyKindName = (typeof KeyKind)[keyof typeof KeyKind];

export interface ApiKeyDoc {
  _id: string;
  org_id: string;
  kind: KeyKindName;
  /** SHA-256 of the whole key, hex. The key itself is never stored. */
  hash: string;
  /** First characters of the key, shown in listings so a human can tell keys apart. */
  prefix: string;
  name: string | null;
  created_at: Date;
  revoked_at: Date | null;
  /** Routing keys: tokens per minute through this key (admin CLI); absent or null takes the org's per-key default, 0 = unlimited. */
  tokens_per_min?: number | null;
  /** The key's spend budget; absent or null: none. */
  budget?: Budget | null;
}

const PREFIX_LENGTH = 12;

export function hashKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export function generateKey(kind: KeyKindName): string {
  return `tr_${kind === 'api' ? 'sk' : 'rk'}_${randomBytes(24).toString('base64url')}`;
}

export class ApiKeyStore {
  private readonly keys: Collection<ApiKeyDoc>;

  constructor(db: Db) {
    this.keys = db.collection<ApiKeyDoc>('api_keys');
  }

  /** Stores the hash of `key` (generated when absent) and returns the key once. */
  async create(orgId: string, kind: KeyKindName, opts: { key?: string; name?: string } = {}): Promise<{ key: string; doc: ApiKeyDoc }> {
    const key = opts.key ?? generateKey(kind);
    const doc: ApiKeyDoc = {
      _id: newId('apiKey'),
      org_id: orgId,
      kind,
      hash: hashKey(key),
      prefix: key.slice(0, PREFIX_LENGTH),
      name: opts.name ?? null,
      created_at: new Date(),
      revoked_at: null,
    };
    await this.keys.insertOne(doc);
    return { key, doc };
  }

  /** Creates the key unless one with the same hash exists; returns whether it was created. */
  async ensure(orgId: string, kind: KeyKindName, key: string, name: string): Promise<boolean> {
    if (await this.keys.findOne({ hash: hashKey(key) })) return false;
    try {
      await this.create(orgId, kind, { key, name });
      return true;
    } catch (err) {
      if (isDuplicateKey(err)) return false;
      throw err;
    }
  }

  findActive(key: string): Promise<ApiKeyDoc | null> {
    return this.findActiveByHash(hashKey(key));
  }

  /** The active key whose hashKey() is `hash`: for a caller that hashed the key already (the authenticator's cache). */
  findActiveByHash(hash: string): Promise<ApiKeyDoc | null> {
    return this.keys.findOne({ hash, revoked_at: null });
  }

  /** A key of any status by id: budgets read it for the sessions it created. */
  byId(id: string): Promise<ApiKeyDoc | null> {
    return this.keys.findOne({ _id: id });
  }

  list(orgId: string, prefix?: string): Promise<ApiKeyDoc[]> {
    const filter: Record<string, unknown> = { org_id: orgId };
    if (prefix) filter.prefix = { $regex: '^' + prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') };
    return this.keys.find(filter).sort({ _id: 1 }).toArray();
  }

  /** Sets (or clears, null) the budget of one key of the org, by id or a prefix naming one key; null when none matches. */
  async setBudget(orgId: string, idOrPrefix: string, budget: Budget | null, byPrefix = true): Promise<ApiKeyDoc | null> {
    const byId = await this.keys.findOne({ org_id: orgId, _id: idOrPrefix });
    const matches = byId ? [byId] : byPrefix ? await this.list(orgId, idOrPrefix) : [];
    if (matches.length !== 1) return null;
    return this.keys.findOneAndUpdate({ _id: matches[0]._id, org_id: orgId }, { $set: { budget } }, { returnDocument: 'after' });
  }

  /** Revokes by id, or by a prefix that names exactly one key of the org. */
  async revoke(orgId: string, idOrPrefix: string): Promise<ApiKeyDoc | null> {
    const byId = await this.keys.findOne({ org_id: orgId, _id: idOrPrefix });
    const matches = byId ? [byId] : await this.list(orgId, idOrPrefix);
    if (matches.length !== 1) return null;
    const revokedAt = matches[0].revoked_at ?? new Date();
    await this.keys.updateOne({ _id: matches[0]._id }, { $set: { revoked_at: revokedAt } });
    return { ...matches[0], revoked_at: revokedAt };
  }

  /** Sets (number) or clears (null) one key's tokens-per-minute limit, by id or a prefix naming exactly one key of the org. */
  async setTokensPerMin(orgId: string, idOrPrefix: string, n: number | null): Promise<ApiKeyDoc | null> {
    const byId = await this.keys.findOne({ org_id: orgId, _id: idOrPrefix });
    const matches = byId ? [byId] : await this.list(orgId, idOrPrefix);
    if (matches.length !== 1) return null;
    return this.keys.findOneAndUpdate({ _id: matches[0]._id }, n === null ? { $unset: { tokens_per_min: '' } } : { $set: { tokens_per_min: n } }, { returnDocument: 'after' });
  }
}
