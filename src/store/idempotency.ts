import { createHash } from 'node:crypto';
import type { Collection, Db } from 'mongodb';
import type { SecretSealer } from '../domain/sealed.js';
import { ConflictError, UnprocessableError } from '../domain/errors.js';
import { isDuplicateKey } from './duplicate-key.js';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * How long an in-flight claim holds its key. Past it, the request that made
 * the claim is taken to be dead (its process killed, or its release lost to
 * a database outage) and a retry may take the claim over. It is well above
 * the longest a live request works under a claim: the session ask's 15 s
 * and the driver's 30 s server selection.
 */
export const IN_FLIGHT_LEASE_MS = 60_000;

interface IdempotencyDoc {
  _id: string;
  scope: string;
  key: string;
  body_hash: string;
  state: 'in_flight' | 'done';
  /** The original response, serialised once so a replay is byte for byte the same. */
  response: string | null;
  status: number | null;
  created_at: Date;
  /** What the request chose to create (a session id), recorded before creating it: a takeover continues with it. */
  resource_id?: string | null;
}

/** `resourceId`: what the request whose stale claim this took over had recorded (remember), else null. */
export type Claim = { kind: 'claimed'; id: string; resourceId: string | null } | { kind: 'replay'; status: number; response: string };

/**
 * Marks a keyed digest of a body's canonical text (SecretBox.digest): bodies can hold `secrets` and `llm_api_key`.
 * `c1:` marks the plain SHA-256 of the canonical text written before (until 28 Nov 2026); a stored hash with
 * neither is the plain SHA-256 of the body's text as it came. Both are still compared as they were taken.
 */
const KEYED = 'h1:';
const CANONICAL = 'c1:';
const PURPOSE = 'idempotency-body';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Keys in order already (often so): the object is written as it is, without a sorted copy. */
function inKeyOrder(keys: string[]): boolean {
  for (let i = 1; i < keys.length; i++) if (keys[i - 1] > keys[i]) return false;
  return true;
}

/**
 * A JSON.stringify replacer that writes each object's members sorted by key. JSON gives member order no meaning,
 * and a client's retry may reorder them (a request kept in a Postgres jsonb column, a map re-serialised): the
 * same body, which must replay rather than be refused as another. Arrays keep their order.
 */
function sortedMembers(_key: string, v: unknown): unknown {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
  const keys = Object.keys(v);
  if (inKeyOrder(keys)) return v;
  // No prototype: a member named __proto__ (JSON.parse makes it an own member) stays a member of the copy.
  const out = Object.create(null) as Record<string, unknown>;
  for (const k of keys.sort()) out[k] = (v as Record<string, unknown>)[k];
  return out;
}

const canonical = (body: unknown) => JSON.stringify(body, sortedMembers);

/** What a request body is compared by, for Idempotency-Key and batch idempotency_key reuse. */
export function bodyHash(body: unknown, box: SecretSealer): string {
  return KEYED + box.digest(PURPOSE, canonical(body));
}

/**
 * Whether `body` is the one a stored hash was taken of. Hashes stored before member order stopped counting
 * (Idempotency-Key records for their 24 h, batches for good) are compared as they were taken.
 */
export function sameBody(stored: string, body: unknown, box: SecretSealer): boolean {
  if (stored.startsWith(KEYED)) return box.digestMatches(PURPOSE, stored.slice(KEYED.length), canonical(body));
  return stored.startsWith(CANONICAL) ? stored === CANONICAL + sha256(canonical(body)) : stored === sha256(JSON.stringify(body));
}

/**
 * Idempotency-Key records, kept 24 h (a reaper deletes older ones; reads
 * ignore them meanwhile). Claiming inserts an in-flight record under a unique
 * (scope, key) index, so two concurrent requests cannot both proceed.
 */
export class IdempotencyStore {
  private readonly col: Collection<IdempotencyDoc>;

  constructor(
    db: Db,
    private readonly box: SecretSealer,
  ) {
    this.col = db.collection<IdempotencyDoc>('idempotency_keys');
  }

  async claim(scope: string, key: string, body: unknown): Promise<Claim> {
    const id = `${scope}|${key}`;
    const hash = bodyHash(body, this.box);
    for (let attempt = 0; attempt < 2; attempt++) {
      const created_at = new Date();
      try {
        await this.col.insertOne({ _id: id, scope, key, body_hash: hash, state: 'in_flight', response: null, status: null, created_at });
        return { kind: 'claimed', id, resourceId: null };
      } catch (err) {
        if (!isDuplicateKey(err)) {
          // The insert may have been applied with its answer lost (the server killed in between): that claim,
          // ours (same created_at), must not hold the key for the whole lease. Seen in the MongoDB SIGKILL fault.
          this.releaseLater({ _id: id, state: 'in_flight', created_at });
          throw err;
        }
      }
      const existing = await this.col.findOne({ _id: id });
      if (!existing) continue;
      if (Date.now() - existing.created_at.getTime() > IDEMPOTENCY_TTL_MS) {
        await this.col.deleteOne({ _id: id, created_at: existing.created_at });
        continue;
      }
      if (!sameBody(existing.body_hash, body, this.box)) {
        throw new UnprocessableError('This Idempotency-Key was used with a different request body.', 'idempotency_key_reused', 'Idempotency-Key');
      }
      if (existing.state === 'in_flight') {
        if (Date.now() - existing.created_at.getTime() > IN_FLIGHT_LEASE_MS && (await this.takeOver(existing))) return { kind: 'claimed', id, resourceId: existing.resource_id ?? null };
        throw new ConflictError('A request with this Idempotency-Key is still in progress; retry shortly.', 'idempotency_key_in_flight', 'Idempotency-Key');
      }
      return { kind: 'replay', status: existing.status ?? 200, response: existing.response ?? 'null' };
    }
    throw new ConflictError('Idempotency-Key could not be claimed; retry.', 'idempotency_key_in_flight', 'Idempotency-Key');
  }

  /** Renews a stale in-flight claim for the caller; false if another request got there first. */
  private async takeOver(stale: IdempotencyDoc): Promise<boolean> {
    const r = await this.col.updateOne({ _id: stale._id, state: 'in_flight', created_at: stale.created_at }, { $set: { created_at: new Date() } });
    return r.modifiedCount === 1;
  }

  /** Records, under the caller's in-flight claim, what it is about to create, for a retry that may take the claim over. */
  async remember(id: string, resourceId: string): Promise<void> {
    await this.col.updateOne({ _id: id, state: 'in_flight' }, { $set: { resource_id: resourceId } });
  }

  async complete(id: string, status: number, response: string): Promise<void> {
    await this.col.updateOne({ _id: id }, { $set: { state: 'done', status, response } });
  }

  /**
   * Frees the key after a failure, so the client's retry runs again. The
   * failure is often the database itself (down or failing over): then the
   * delete is retried in the background, once a second until the lease ends,
   * so the key is free within a second of the database being back rather
   * than only when the lease runs out.
   */
  async release(id: string): Promise<void> {
    try {
      await this.col.deleteOne({ _id: id, state: 'in_flight' });
    } catch (err) {
      this.releaseLater({ _id: id, state: 'in_flight' });
      throw err;
    }
  }

  /** Deletes the in-flight claim `filter` names once a second until that works or the lease has ended. */
  private releaseLater(filter: Pick<IdempotencyDoc, '_id' | 'state'> & Partial<Pick<IdempotencyDoc, 'created_at'>>): void {
    const until = Date.now() + IN_FLIGHT_LEASE_MS;
    const retry = () => {
      if (Date.now() < until) this.col.deleteOne(filter).catch(() => setTimeout(retry, 1000).unref());
    };
    setTimeout(retry, 1000).unref();
  }

  /** Removes every record of one scope (a deleted session's `session:<id>`). */
  async removeScope(scope: string): Promise<number> {
    return (await this.col.deleteMany({ scope })).deletedCount;
  }

  async reap(now = Date.now()): Promise<number> {
    const r = await this.col.deleteMany({ created_at: { $lt: new Date(now - IDEMPOTENCY_TTL_MS) } });
    return r.deletedCount;
  }
}
