import type { Db } from 'mongodb';
import type { SecretBox } from '../crypto/secret-box.js';
import { ApiKeyStore } from './api-keys.js';
import { BlobStore } from './blobs.js';
import { CredentialStore } from './credentials.js';
import { OrgStore } from './orgs.js';

/** The repositories, each over one collection family; every query they make is scoped by org. */
export interface Stores {
  orgs: OrgStore;
  apiKeys: ApiKeyStore;
  credentials: CredentialStore;
  blobs: BlobStore;
}

export function createStores(db: Db, box: SecretBox): Stores {
  return {
    orgs: new OrgStore(db),
    apiKeys: new ApiKeyStore(db),
    credentials: new CredentialStore(db, box),
    blobs: new BlobStore(db),
  };
}
