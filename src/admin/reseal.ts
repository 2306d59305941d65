import type { Db, Document } from 'mongodb';
import type { Sealed } from '../domain/sealed.js';
import type { SecretBox } from '../lib/crypto/secret-box.js';
import { llmKeyAad, secretsAad } from '../app/sessions/create-session.js';
import { credentialAad } from '../store/credentials.js';
import { webhookSecretAad } from '../store/webhook-configs.js';

/** A sealed field of a collection, and what its value is bound to. Every `box.seal(` in src/ has one here. */
interface SealedField {
  collection: string;
  field: string;
  aad(doc: Document): string;
}

export const SEALED_FIELDS: readonly SealedField[] = Object.freeze([
  { collection: 'credentials', field: 'value', aad: (d) => credentialAad(d.org_id, d.name) },
  { collection: 'webhook_configs', field: 'secret', aad: (d) => webhookSecretAad(d.org_id, d.agent_id) },
  { collection: 'webhook_configs', field: 'previous_secret', aad: (d) => webhookSecretAad(d.org_id, d.agent_id) },
  { collection: 'sessions', field: 'secrets', aad: (d) => secretsAad(d._id) },
  { collection: 'sessions', field: 'llm_api_key', aad: (d) => llmKeyAad(d._id) },
]);

export interface ResealCount {
  collection: string;
  field: string;
  /** Sealed under an older key and now under the current one. */
  resealed: number;
  /** Changed by someone else between the read and the write (a new value is sealed under the current key already). */
  changed: number;
  /** Would not open: the key that sealed it is not configured, or the value was tampered with. Left as it was. */
  failed: number;
}

export interface ResealReport {
  key: string;
  fields: ResealCount[];
  /** The first few values that would not open, to look at by hand. */
  failures: { collection: string; field: string; id: string; error: string }[];
}

const MAX_LISTED_FAILURES = 20;

/**
 * Seals every value sealed under an older key again under the current one,
 * so the older keys can leave TROUPE_MASTER_KEY. Pages through each
 * collection in _id order, `pageSize` documents at a time (bounded memory),
 * and writes each value only if it is still the one read, so a value changed
 * meanwhile is left to its writer. Running it again finds nothing to do.
 */
export async function reseal(db: Db, box: SecretBox, currentKey: string, pageSize = 200): Promise<ResealReport> {
  const report: ResealReport = { key: currentKey, fields: [], failures: [] };
  for (const f of SEALED_FIELDS) {
    const count: ResealCount = { collection: f.collection, field: f.field, resealed: 0, changed: 0, failed: 0 };
    report.fields.push(count);
    const col = db.collection<Document>(f.collection);
    let after: unknown = null;
    for (;;) {
      const filter: Document = { [`${f.field}.kid`]: { $exists: true, $ne: currentKey } };
      if (after !== null) filter._id = { $gt: after };
      const page = await col.find(filter).sort({ _id: 1 }).limit(pageSize).toArray();
      for (const doc of page) {
        const old = doc[f.field] as Sealed;
        let fresh: Sealed;
        try {
          if (!box.isStale(old)) continue;
          fresh = box.seal(box.open(old, f.aad(doc)), f.aad(doc));
        } catch (err) {
          count.failed++;
          if (report.failures.length < MAX_LISTED_FAILURES) report.failures.push({ collection: f.collection, field: f.field, id: String(doc._id), error: (err as Error).message });
          continue;
        }
        const done = await col.updateOne({ _id: doc._id, [`${f.field}.kid`]: old.kid, [`${f.field}.iv`]: old.iv, [`${f.field}.ct`]: old.ct }, { $set: { [f.field]: fresh } });
        if (done.modifiedCount === 1) count.resealed++;
        else count.changed++;
      }
      if (page.length < pageSize) break;
      after = page[page.length - 1]._id;
    }
  }
  return report;
}
