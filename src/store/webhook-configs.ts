import { randomBytes } from 'node:crypto';
import type { Collection, Db } from 'mongodb';
import type { Sealed, SecretSealer } from '../domain/sealed.js';
import type { WebhookConfigDoc, WebhookEventType } from '../domain/views/webhook-config.js';
import { retryDuplicateUpsert } from './duplicate-key.js';

export const DEFAULT_EVENT_TYPES: WebhookEventType[] = ['tool.call_requested'];

/** How long the secret replaced by a rotation still signs deliveries, so receivers can switch over. */
export const ROTATION_OVERLAP_MS = 60 * 60 * 1000;

/** What the delivery actor needs: where, which events, and the secrets to sign with (current first). */
export interface DeliveryTarget {
  url: string;
  event_types: WebhookEventType[];
  secrets: string[];
}

/** The agent as this store needs to see it; the agents collection is owned by the agents store. */
export interface AgentPresence {
  deleted: boolean;
}

/** `whsec_` + 32 random bytes, base64url: prefixed so a leaked secret is recognisable in scans. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

function sameSealed(a: Sealed, b: Sealed): boolean {
  return a.kid === b.kid && a.iv === b.iv && a.ct === b.ct && a.tag === b.tag;
}

/** What an agent's sealed signing secrets are bound to (also for `troupe-admin reseal`). */
export function webhookSecretAad(orgId: string, agentId: string): string {
  return `webhook-secret:${orgId}:${agentId}`;
}

/**
 * One webhook configuration per agent. Signing secrets are sealed with the
 * org and agent bound in as associated data, so a sealed value copied to
 * another agent's record does not open.
 */
export class WebhookConfigStore {
  private readonly col: Collection<WebhookConfigDoc>;
  private readonly agents: Collection<{ _id: string; org_id: string; deleted_at?: Date | null }>;

  constructor(db: Db, private readonly box: SecretSealer) {
    this.col = db.collection<WebhookConfigDoc>('webhook_configs');
    this.agents = db.collection('agents');
  }

  private aad(orgId: string, agentId: string): string {
    return webhookSecretAad(orgId, agentId);
  }

  /** The agents of the org whose webhook takes `type` (and is not disabled): where an org-wide event goes. */
  async subscribers(orgId: string, type: WebhookEventType): Promise<string[]> {
    const docs = await this.col.find({ org_id: orgId, event_types: type, disabled_at: null }, { projection: { agent_id: 1 } }).limit(1000).toArray();
    return docs.map((d) => d.agent_id);
  }

  /** The agent in this org, or null; a tiny read so this store does not depend on the agents store. */
  async agent(orgId: string, agentId: string): Promise<AgentPresence | null> {
    const doc = await this.agents.findOne({ _id: agentId, org_id: orgId }, { projection: { _id: 1, deleted_at: 1 } });
    return doc ? { deleted: doc.deleted_at instanceof Date } : null;
  }

  get(orgId: string, agentId: string): Promise<WebhookConfigDoc | null> {
    return this.col.findOne({ org_id: orgId, agent_id: agentId });
  }

  /**
   * Creates or updates the configuration. A secret is generated only when the
   * record is created; `signingSecret` is set only for the caller whose upsert
   * created it, so concurrent first PUTs cannot both hand out a secret.
   */
  async put(orgId: string, agentId: string, url: string, eventTypes: WebhookEventType[]): Promise<{ doc: WebhookConfigDoc; signingSecret?: string }> {
    const now = new Date();
    const secret = newSigningSecret();
    const sealed = this.box.seal(secret, this.aad(orgId, agentId));
    const doc = await retryDuplicateUpsert(() =>
      this.col.findOneAndUpdate(
        { org_id: orgId, agent_id: agentId },
        {
          // A PUT is how a client re-enables a webhook its receiver disabled with 410.
          $set: { url, event_types: eventTypes, updated_at: now, disabled_at: null },
          $setOnInsert: {
            _id: `${orgId}:${agentId}`,
            org_id: orgId,
            agent_id: agentId,
            secret: sealed,
            previous_secret: null,
            previous_secret_expires_at: null,
            created_at: now,
          },
        },
        { upsert: true, returnDocument: 'after' },
      ),
    );
    return sameSealed(doc!.secret, sealed) ? { doc: doc!, signingSecret: secret } : { doc: doc! };
  }

  /**
   * Replaces the secret; the old one keeps signing for ROTATION_OVERLAP_MS.
   * The update is conditional on the secret it replaces, so of two concurrent
   * rotations one retries on top of the other instead of losing a secret.
   */
  async rotate(orgId: string, agentId: string): Promise<{ doc: WebhookConfigDoc; signingSecret: string } | null> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const current = await this.get(orgId, agentId);
      if (!current) return null;
      const secret = newSigningSecret();
      const now = new Date();
      const update = {
        secret: this.box.seal(secret, this.aad(orgId, agentId)),
        previous_secret: current.secret,
        previous_secret_expires_at: new Date(now.getTime() + ROTATION_OVERLAP_MS),
        updated_at: now,
      };
      const doc = await this.col.findOneAndUpdate(
        { _id: current._id, org_id: orgId, 'secret.iv': current.secret.iv, 'secret.ct': current.secret.ct },
        { $set: update },
        { returnDocument: 'after' },
      );
      if (doc) return { doc, signingSecret: secret };
    }
    throw new Error(`webhook secret of agent ${agentId} kept changing during rotation`);
  }

  async delete(orgId: string, agentId: string): Promise<boolean> {
    const r = await this.col.deleteOne({ org_id: orgId, agent_id: agentId });
    return r.deletedCount === 1;
  }

  /** For the delivery actor only: plaintext secrets must never reach a response or a log. */
  async getForDelivery(orgId: string, agentId: string, now = new Date()): Promise<DeliveryTarget | null> {
    const doc = await this.get(orgId, agentId);
    return doc ? this.targetOf(doc, now) : null;
  }

  /**
   * getForDelivery for the hot path: one read by `_id` (the only fast filter
   * on FerretDB v1), plus whether a 410 disabled the webhook.
   */
  async deliveryTarget(orgId: string, agentId: string, now = new Date()): Promise<(DeliveryTarget & { disabled: boolean }) | null> {
    const doc = await this.col.findOne({ _id: `${orgId}:${agentId}` });
    if (!doc || doc.org_id !== orgId || doc.agent_id !== agentId) return null;
    return { ...this.targetOf(doc, now), disabled: !!doc.disabled_at };
  }

  /**
   * Stops deliveries after a 410 Gone. Conditional on the URL that answered,
   * so a PUT of a new URL made meanwhile is not disabled by the old one.
   */
  async disable(orgId: string, agentId: string, url: string, now = new Date()): Promise<boolean> {
    const r = await this.col.updateOne({ _id: `${orgId}:${agentId}`, org_id: orgId, url }, { $set: { disabled_at: now, updated_at: now } });
    return r.modifiedCount === 1;
  }

  private targetOf(doc: WebhookConfigDoc, now: Date): DeliveryTarget {
    const { org_id: orgId, agent_id: agentId } = doc;
    const aad = this.aad(orgId, agentId);
    const secrets = [this.box.open(doc.secret, aad)];
    if (doc.previous_secret && doc.previous_secret_expires_at && doc.previous_secret_expires_at > now) {
      secrets.push(this.box.open(doc.previous_secret, aad));
    }
    return { url: doc.url, event_types: doc.event_types, secrets };
  }
}
