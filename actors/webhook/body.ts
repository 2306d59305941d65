import type { WebhookDeliveryDoc } from '../../src/store/webhook-deliveries.js';
import type { SessionDoc } from '../../src/store/sessions.js';
import { webhookEventId, type WebhookJob } from './messages.js';

/** What a batch event carries besides its status: the children counted when the body is built. */
export interface BatchFacts {
  counts: Record<string, number>;
}

export interface BodySources {
  session(id: string): Promise<SessionDoc | null>;
  /** Null when the batch is not readable (yet): the body then has `counts: null`. */
  batch(orgId: string, id: string): Promise<BatchFacts | null>;
}

/** The first time a delivery is logged: what it is about and its body, serialised once for every attempt. */
export type BuiltBody = Pick<WebhookDeliveryDoc, 'event_id' | 'event_type' | 'session_id' | 'message_id' | 'batch_id' | 'body'>;

/**
 * The wire body of an event (spec: Webhook deliveries). Lifecycle bodies
 * carry the session's fields as they are when the delivery is first built;
 * the receiver calls GET for the state after that. Null when the subject is
 * gone or belongs to another org (nothing to deliver).
 */
export async function buildBody(src: BodySources, job: WebhookJob, createdAt: Date): Promise<BuiltBody | null> {
  const id = webhookEventId(job);
  switch (job.kind) {
    case 'tool.call_requested':
      return { event_id: id, event_type: job.kind, session_id: job.session_id, message_id: job.body.message_id, batch_id: null, body: JSON.stringify(job.body) };
    case 'session.lifecycle': {
      const s = await src.session(job.session_id);
      if (!s || s.org_id !== job.org_id) return null;
      const data = {
        session_id: s._id,
        batch_id: s.batch_id ?? null,
        agent_id: s.agent_id,
        version_id: s.version_id,
        llm_id: s.llm_id,
        status: s.status,
        last_message_status: s.last_message_status,
        metadata: s.metadata ?? {},
      };
      return { event_id: id, event_type: job.type, session_id: s._id, message_id: job.message_id, batch_id: s.batch_id ?? null, body: JSON.stringify({ id, type: job.type, created_at: createdAt.toISOString(), data }) };
    }
    case 'batch.lifecycle': {
      const b = await src.batch(job.org_id, job.batch_id);
      // The event names the terminal status it reports; counts come from the children, the source of truth.
      const data = { batch_id: job.batch_id, agent_id: job.agent_id, status: job.type.slice('batch.'.length), counts: b?.counts ?? null };
      return { event_id: id, event_type: job.type, session_id: null, message_id: null, batch_id: job.batch_id, body: JSON.stringify({ id, type: job.type, created_at: createdAt.toISOString(), data }) };
    }
  }
}
