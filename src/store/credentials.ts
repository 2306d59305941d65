import type { Collection, Db } from 'mongodb';
import type { SecretSealer } from '../domain/sealed.js';
import type { CredentialDoc } from '../domain/views/credential.js';
import { retryDuplicateUpsert } from './duplicate-key.js';
import type { PageRequest } from './page.js';

/** What a credential's sealed value is bound to (also for `troupe-admin reseal`). */
export function credentialAad(orgId: string, name: string): string {
  return `credential:${orgId}:${name}`;
}

/** Org-level named secrets, sealed with AES-256-GCM; the org and name are bound in as associated data. */
export class CredentialStore {
  private readonly col: Collection<CredentialDoc>;

  constructor(db: Db, private readonly box: SecretSealer) {
    this.col = db.collection<CredentialDoc>('credentials');
  }

  private aad(orgId: string, name: string): string {
    return credentialAad(orgId, name);
  }

  async put(orgId: string, name: string, value: string): Promise<CredentialDoc> {
    const now = new Date();
    const sealed = this.box.seal(value, this.aad(orgId, name));
    const doc = await retryDuplicateUpsert(() =>
      this.col.findOneAndUpdate(
        { org_id: orgId, name },
        { $set: { value: sealed, updated_at: now }, $setOnInsert: { _id: `${orgId}:${name}`, org_id: orgId, name, created_at: now } },
        { upsert: true, returnDocument: 'after' },
      ),
    );
    return doc!;
  }

  /** In name order after the cursor `after` (a name), on the (org_id, name) index; `limit + 1` rows for pageOf. */
  list(orgId: string, page: PageRequest): Promise<CredentialDoc[]> {
    const filter = page.after === null ? { org_id: orgId } : { org_id: orgId, name: { $gt: page.after } };
    return this.col.find(filter, { projection: { value: 0 } }).sort({ name: 1 }).limit(page.limit + 1).toArray();
  }

  /** Which of `names` the org has stored: a router's candidates name a few, and the org may hold many. */
  async stored(orgId: string, names: string[]): Promise<Set<string>> {
    const rows = await this.col.find({ org_id: orgId, name: { $in: [...new Set(names)] } }, { projection: { _id: 0, name: 1 } }).toArray();
    return new Set(rows.map((r) => r.name));
  }

  async delete(orgId: string, name: string): Promise<boolean> {
    const r = await this.col.deleteOne({ org_id: orgId, name });
    return r.deletedCount === 1;
  }

  /** The plaintext, for model calls and the sandbox only; never for a response or a log. */
  async reveal(orgId: string, name: string): Promise<string | null> {
    const doc = await this.col.findOne({ org_id: orgId, name });
    return doc ? this.box.open(doc.value, this.aad(orgId, name)) : null;
  }
}
