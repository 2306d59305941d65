/** An org credential as stored (sealed) and as the API shows it (its name and times, never its value). */
import type { Sealed } from '../sealed.js';

export interface CredentialDoc {
  _id: string;
  org_id: string;
  name: string;
  value: Sealed;
  created_at: Date;
  updated_at: Date;
}

export interface CredentialView {
  name: string;
  created_at: string;
  updated_at: string;
}

export function credentialView(doc: CredentialDoc): CredentialView {
  return { name: doc.name, created_at: doc.created_at.toISOString(), updated_at: doc.updated_at.toISOString() };
}
