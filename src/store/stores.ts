import { ScheduleStore } from './schedules.js';
import type { Db } from 'mongodb';
import type { SecretSealer } from '../domain/sealed.js';
import { AgentStore } from './agents.js';
import { ApiKeyStore } from './api-keys.js';
import { BatchStore } from './batches.js';
import { BlobStore } from './blobs.js';
import { CredentialStore } from './credentials.js';
import { FileStore } from './files.js';
import { IdempotencyStore } from './idempotency.js';
import { LedgerStore } from './ledger.js';
import { MessageStore } from './messages.js';
import { SessionStore } from './sessions.js';
import { SnapshotStore } from './snapshots.js';
import { StorageBindingStore } from './storage-bindings.js';
import { OrgStore } from './orgs.js';
import { RouterStore } from './routers.js';
import { UsageStore } from './usage.js';
import { WebhookConfigStore } from './webhook-configs.js';
import { WebhookDeliveryStore } from './webhook-deliveries.js';

/** The repositories, each over one collection family; every query they make is scoped by org. */
export interface Stores {
  orgs: OrgStore;
  apiKeys: ApiKeyStore;
  credentials: CredentialStore;
  blobs: BlobStore;
  snapshots: SnapshotStore;
  agents: AgentStore;
  files: FileStore;
  webhookConfigs: WebhookConfigStore;
  webhookDeliveries: WebhookDeliveryStore;
  sessions: SessionStore;
  ledger: LedgerStore;
  messages: MessageStore;
  idempotency: IdempotencyStore;
  routers: RouterStore;
  usage: UsageStore;
  batches: BatchStore;
  storageBindings: StorageBindingStore;
  schedules: ScheduleStore;
}

/** `sharded`: the database is a sharded cluster (MongoHandle.sharded); hot reads then name the shard key. */
export function createStores(db: Db, box: SecretSealer, sharded = false): Stores {
  return {
    orgs: new OrgStore(db),
    apiKeys: new ApiKeyStore(db),
    credentials: new CredentialStore(db, box),
    blobs: new BlobStore(db),
    snapshots: new SnapshotStore(db),
    agents: new AgentStore(db),
    files: new FileStore(db),
    webhookConfigs: new WebhookConfigStore(db, box),
    webhookDeliveries: new WebhookDeliveryStore(db),
    sessions: new SessionStore(db),
    ledger: new LedgerStore(db, sharded),
    messages: new MessageStore(db, sharded),
    idempotency: new IdempotencyStore(db, box),
    routers: new RouterStore(db),
    usage: new UsageStore(db),
    batches: new BatchStore(db),
    storageBindings: new StorageBindingStore(db),
    schedules: new ScheduleStore(db),
  };
}
